import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { RequestMethod } from '@nestjs/common';
import type { Params } from 'nestjs-pino';
import type { Options } from 'pino-http';
import { type DestinationStream, pino } from 'pino';
import type { LogLevel } from '../../config.js';
import { routeOf } from './metrics.js';

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * nestjs-pino (pino-http underneath): Nest's own lines and one line per request, as JSON lines on
 * stdout (`pretty` for people). The request line holds the request id, method, route pattern,
 * status and duration, nothing else: no headers (Authorization), no query, no body.
 */
export function loggerParams(log: { level: LogLevel; pretty: boolean }, destination?: DestinationStream): Params {
  const options: NonNullable<Options<IncomingMessage, ServerResponse>> = {
    level: log.level,
    // The client's X-Request-Id when sane, else a new one; always echoed.
    genReqId: (request: IncomingMessage, response: ServerResponse) => {
      const given = request.headers['x-request-id'];
      const id = typeof given === 'string' && SANE_REQUEST_ID.test(given) ? given : randomUUID();
      response.setHeader('X-Request-Id', id);
      return id;
    },
    customLogLevel: (_request, response, error) =>
      error !== undefined || response.statusCode >= 500 ? 'error' : 'info',
    customSuccessMessage: () => 'request',
    customErrorMessage: () => 'request',
    customAttributeKeys: { req: 'request', res: 'response', responseTime: 'durationMs' },
    // The route is known only once a route has handled the request.
    customSuccessObject: (request, _response, fields: object) => ({ ...fields, route: routeOf(request) }),
    customErrorObject: (request, _response, _error, fields: object) => ({ ...fields, route: routeOf(request) }),
    serializers: {
      req: (request: { id: unknown; method: unknown }) => ({ id: request.id, method: request.method }),
      res: (response: { statusCode: unknown }) => ({ status: response.statusCode }),
    },
  };
  // Explicit: nestjs-pino's default routes add the paths outside /v1 a second time (two lines each).
  const forRoutes: Params['forRoutes'] = [{ path: '{*path}', method: RequestMethod.ALL }];
  if (log.pretty)
    return { forRoutes, pinoHttp: { ...options, transport: { target: 'pino-pretty', options: { colorize: false } } } };
  // Lines are written in batches of 4 KiB, or once a second: a write per line cost about a tenth of
  // a request (docs/performance.md). pino flushes what is left when the process exits.
  return { forRoutes, pinoHttp: [options, destination ?? stdoutDestination()] };
}

let stdout: ReturnType<typeof pino.destination> | null = null;

function stdoutDestination(): ReturnType<typeof pino.destination> {
  stdout ??= pino.destination({ dest: 1, sync: false, minLength: 4096, periodicFlush: 1000 });
  return stdout;
}

/**
 * Writes out what the stdout log still holds, before the process exits. pino's own flush at exit
 * is synchronous, and a synchronous write that meets a reader gone away (`main.js | head`, EPIPE)
 * is retried forever by sonic-boom, so the process never exits. An asynchronous one that meets
 * EPIPE makes pino stop writing, and the exit then goes through.
 */
export function flushLog(timeoutMs = 1000): Promise<void> {
  const destination = stdout;
  if (destination === null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    destination.flush(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/**
 * For lines written while the service starts, before Nest's own logger exists (Nest buffers its
 * lines until then, and drops them if the start fails): same format, written at once.
 */
export function startupLogger(log: { level: LogLevel; pretty: boolean }, dest: 1 | 2 = 1) {
  if (log.pretty)
    return pino({
      level: log.level,
      transport: { target: 'pino-pretty', options: { colorize: false, destination: dest } },
    });
  return pino({ level: log.level }, pino.destination({ dest, sync: true }));
}
