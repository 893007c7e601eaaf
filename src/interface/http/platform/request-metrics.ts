import type { NextFunction } from 'express';
import { RATE_LIMIT_POLICIES } from '../../../application/platform/rate-limits.js';
import type { HttpMetrics, RefusingPolicy } from './metrics.js';
import { routeOf } from './route-of.js';

/** The parts of Express's request and response the observer reads (an honest fake can stand in for them). */
export type ObservedRequest = { method: string };
export type ObservedResponse = {
  statusCode: number;
  writableFinished: boolean;
  getHeader(name: string): number | string | string[] | undefined;
  once(event: 'close', listener: () => void): unknown;
};

/** Observes every request, whatever answers it (a route, authentication, a 404 outside /v1). */
export function observeRequests(metrics: HttpMetrics) {
  return (request: ObservedRequest, response: ObservedResponse, next: NextFunction): void => {
    const started = process.hrtime.bigint();
    response.once('close', () => {
      // 499: the client went away before the answer was complete (nginx's convention).
      const status = response.writableFinished ? response.statusCode : 499;
      metrics.observe(request.method, routeOf(request), status, Number(process.hrtime.bigint() - started) / 1e9);
      if (status === 429) metrics.refused(refusingPolicy(response.getHeader('RateLimit')));
    });
    next();
  };
}

/**
 * The policy a 429 names: the first item of its RateLimit header (IETF draft "RateLimit header
 * fields for HTTP", a structured-field list whose items are policy names, e.g.
 * `"failed-auth";r=0;t=30`). Any name but ours is `unknown`, so label values stay few.
 */
export function refusingPolicy(header: number | string | string[] | undefined): RefusingPolicy {
  const value = Array.isArray(header) ? header[0] : header;
  if (typeof value !== 'string') return 'unknown';
  const name = /^\s*(?:"([^"\\]*)"|([A-Za-z*][\w:/!#$%&'*+.^`|~-]*))/.exec(value);
  const policy = name?.[1] ?? name?.[2];
  return RATE_LIMIT_POLICIES.find((known) => known === policy) ?? 'unknown';
}
