import type { NextFunction, Request, Response } from 'express';
import { isApiPath } from '../platform/api-prefix.js';
import { clientAddress } from '../platform/client-address.js';
import { answerWithError } from '../platform/error.filter.js';
import type { RefusedRequestsLog } from '../platform/refused-requests-log.js';

/** The statuses of a refusal: no key or a wrong one (401), over a limit (429). */
const REFUSALS = new Set([401, 429]);

type Middleware = (request: Request, response: Response, next: NextFunction) => void;

/**
 * Authentication (BearerKeyMiddleware) on every path of the API (`/v1` itself included, isApiPath), its refusals answered
 * here: the Error body, as the error filter writes it, and a refusal counted in the log. Anything
 * else that authentication failed with (the key store unreachable: 503) is logged as every such
 * answer is (error.filter.ts). Checked here rather than mounted with `app.use(API_PREFIX, ...)`:
 * Express would match the prefix's pattern and rewrite `request.url` around each of a mount's
 * handlers, on every request. `request.path` is the pathname Express's own routing reads.
 */
export function authenticateApiPaths(authentication: { use: Middleware }, log: RefusedRequestsLog): Middleware {
  return (request, response, next) => {
    if (!isApiPath(request.path)) return next();
    authentication.use(request, response, (error?: unknown) => {
      if (error === undefined) return next();
      if (response.headersSent) return next(error);
      answerWithError(error, request, response);
      if (REFUSALS.has(response.statusCode)) log.count(clientAddress(request), response.statusCode);
    });
  };
}
