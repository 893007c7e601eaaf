import { Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import type { NextFunction, Request, Response } from 'express';
import { isApiPath } from './api-prefix.js';
import { clientAddress } from './client-address.js';
import { answerWithError } from './error.filter.js';

/** How often the counts are written. */
export const REFUSED_REQUESTS_INTERVAL_MS = 10_000;
/** Addresses counted apart in one interval; refusals from any further address count under `other`. */
export const MAX_COUNTED_ADDRESSES = 10_000;

/** The statuses of a refusal: no key or a wrong one (401), over a limit (429). */
const REFUSALS = new Set([401, 429]);

export type RefusedRequests = { address: string; statuses: Record<string, number> };

/**
 * The request log's account of the requests authentication refuses. Not a line each: under a
 * flood of wrong keys, writing them would cost more than refusing them. Counted per client address
 * and status instead, and written as one line per address every REFUSED_REQUESTS_INTERVAL_MS (and
 * at shutdown): `{"context":"RefusedRequests","address":"203.0.113.9","statuses":{"401":3,"429":5120},"msg":"requests refused"}`.
 */
@Injectable()
export class RefusedRequestsLog implements OnApplicationShutdown {
  private readonly logger = new Logger('RefusedRequests');
  private counts = new Map<string, Record<string, number>>();

  count(address: string, status: number): void {
    const key = this.counts.has(address) || this.counts.size < MAX_COUNTED_ADDRESSES ? address : 'other';
    let statuses = this.counts.get(key);
    if (statuses === undefined) {
      statuses = {};
      this.counts.set(key, statuses);
    }
    statuses[status] = (statuses[status] ?? 0) + 1;
  }

  /** What was counted since the last call; counting starts afresh. */
  take(): RefusedRequests[] {
    const counted = this.counts;
    this.counts = new Map();
    return [...counted].map(([address, statuses]) => ({ address, statuses }));
  }

  @Interval('refused-requests-log', REFUSED_REQUESTS_INTERVAL_MS)
  flush(): void {
    for (const line of this.take()) this.logger.log({ ...line, msg: 'requests refused' });
  }

  onApplicationShutdown(): void {
    this.flush();
  }
}

type Middleware = (request: Request, response: Response, next: NextFunction) => void;

/**
 * Authentication on every path of the API (`/v1` itself included, isApiPath), its refusals answered
 * here: the Error body, as the error filter writes it, and a refusal counted in the log. Anything
 * else that authentication failed with (the key store unreachable: 503) is logged as every such
 * answer is (error.filter.ts). Checked here rather than mounted with `app.use(API_PREFIX, ...)`:
 * Express would match the prefix's pattern and rewrite `request.url` around each of a mount's
 * handlers, on every request. `request.path` is the pathname Express's own routing reads.
 */
export function authenticateApiPaths(authenticate: Middleware, log: RefusedRequestsLog): Middleware {
  return (request, response, next) => {
    if (!isApiPath(request.path)) return next();
    authenticate(request, response, (error?: unknown) => {
      if (error === undefined) return next();
      if (response.headersSent) return next(error);
      answerWithError(error, request, response);
      if (REFUSALS.has(response.statusCode)) log.count(clientAddress(request), response.statusCode);
    });
  };
}
