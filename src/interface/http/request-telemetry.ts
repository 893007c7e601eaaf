import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import type { HttpMetrics } from './metrics.js';

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

const requestIds = new WeakMap<object, string>();

/** The id of a request: the client's X-Request-Id when sane, else a generated one. */
export function requestIdOf(request: object): string | undefined {
  return requestIds.get(request);
}

/**
 * One log line and one metric sample per request, whatever answers it (a route, the guard, a
 * 404 outside /v1). The line has method, route, status, duration and request id, and nothing
 * else: no headers (Authorization), no query, no body.
 */
export function requestTelemetry(logger: Logger, metrics: HttpMetrics) {
  return (request: Request, response: Response, next: NextFunction): void => {
    const given = request.headers['x-request-id'];
    const requestId = typeof given === 'string' && SANE_REQUEST_ID.test(given) ? given : randomUUID();
    requestIds.set(request, requestId);
    response.setHeader('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    response.once('close', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      // 499: the client went away before the answer was complete (nginx's convention).
      const status = response.writableFinished ? response.statusCode : 499;
      const route = routeOf(request);
      metrics.observe(request.method, route, status, seconds);
      const line = { requestId, method: request.method, route, status, durationMs: Math.round(seconds * 1e6) / 1e3 };
      if (status >= 500) logger.error(line, 'request');
      else logger.info(line, 'request');
    });
    next();
  };
}

/** The matched route pattern, or a fixed label for paths no route matched. */
function routeOf(request: Request): string {
  const route: unknown = request.route;
  const path = typeof route === 'object' && route !== null && 'path' in route ? route.path : null;
  return typeof path === 'string' ? `${request.baseUrl}${path}` : 'unmatched';
}
