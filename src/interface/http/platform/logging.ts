import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { RequestMethod } from '@nestjs/common';
import type { Params } from 'nestjs-pino';
import type { Options } from 'pino-http';
import { type DestinationStream, type Logger, pino } from 'pino';
import type { default as PinoPretty, MessageFormatFunc } from 'pino-pretty';
import type { LevelWithSilent } from 'pino';
import { routeOf } from './route-of.js';
import { pathOf } from './request-path.js';

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export type LogSettings = { level: LevelWithSilent; pretty: boolean };

type HttpLogOptions = NonNullable<Options<IncomingMessage, ServerResponse>>;

/**
 * The request id: the client's X-Request-Id when sane, else a new one; always echoed. Given at the
 * edge, before authentication, so that a refused request carries one too.
 */
export function assignRequestId(request: IncomingMessage, response: ServerResponse, next: () => void): void {
  request.id = requestIdOf(request, response);
  next();
}

function requestIdOf(request: IncomingMessage, response: ServerResponse): string {
  const given = request.headers['x-request-id'];
  const id = typeof given === 'string' && SANE_REQUEST_ID.test(given) ? given : randomUUID();
  response.setHeader('X-Request-Id', id);
  return id;
}

/**
 * nestjs-pino (pino-http underneath): Nest's own lines and one line per request (a request that
 * authentication refuses is counted by RefusedRequestsLog instead). JSON lines on
 * stdout by default; `pretty` (for people) turns the same lines into one coloured line each. The
 * request line holds the request id, method, route pattern, status and duration, nothing else: no
 * headers (Authorization), no query, no body.
 */
export function loggerParams(
  log: LogSettings,
  destination?: DestinationStream,
  colour = hasColours(process.stdout),
): Params {
  const options: HttpLogOptions = {
    level: log.level,
    // assignRequestId() has given every request its id at the edge, and pino-http keeps an id it
    // finds; this is for a request that did not pass there.
    genReqId: requestIdOf,
    customLogLevel: (_request, response, error) =>
      error !== undefined || response.statusCode >= 500 ? 'error' : 'info',
    customSuccessMessage: () => 'request',
    customErrorMessage: () => 'request',
    customAttributeKeys: { req: 'request', res: 'response', responseTime: 'durationMs' },
    // The route is known only once a route has handled the request.
    customSuccessObject: (request, _response, fields: object) => ({ ...fields, route: routeOf(request) }),
    customErrorObject: (request, _response, _error, fields: object) => ({ ...fields, route: routeOf(request) }),
    // Unwrapped: pino-http would first copy every request and response into pino-std-serializers'
    // full objects (url, headers, address...), only for these two to keep a field or two of them.
    // Unwrapped serializers go by the keys as renamed above.
    wrapSerializers: false,
    serializers: {
      request: (request: { id: unknown; method: unknown }) => ({ id: request.id, method: request.method }),
      response: (response: { statusCode: unknown }) => ({ status: response.statusCode }),
    },
  };
  // Explicit: nestjs-pino's default routes add the paths outside /v1 a second time (two lines each).
  const forRoutes: Params['forRoutes'] = [{ path: '{*path}', method: RequestMethod.ALL }];
  if (log.pretty) {
    // A person also wants the path that was asked for (the JSON line keeps only the route pattern).
    const withPath: HttpLogOptions = {
      ...options,
      customSuccessObject: (request, _response, fields: object) => ({
        ...fields,
        route: routeOf(request),
        path: pathOf(request),
      }),
      customErrorObject: (request, _response, _error, fields: object) => ({
        ...fields,
        route: routeOf(request),
        path: pathOf(request),
      }),
    };
    return { forRoutes, pinoHttp: [withPath, prettyStream(destination ?? 1, colour)] };
  }
  // Lines are written in batches of 4 KiB, or once a second: a write per line cost about a tenth of
  // a request (docs/performance.md). pino flushes what is left when the process exits.
  return { forRoutes, pinoHttp: [options, destination ?? stdoutDestination()] };
}

/**
 * The pretty log: pino-pretty in this thread, writing synchronously, so that its lines and the
 * first-run key banner (written straight to stdout) come out in the order they were written.
 * Required here, not imported: a JSON log (production's) never loads it.
 */
function prettyStream(destination: DestinationStream | 1 | 2, colour: boolean): DestinationStream {
  const pinoPretty = createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty;
  return pinoPretty({
    destination,
    sync: true,
    colorize: colour,
    translateTime: 'SYS:HH:MM:ss.l',
    // Shown in the message, or of no use to a person at a terminal.
    ignore: 'pid,hostname,context,request,response,durationMs,route,path',
    singleLine: true,
    messageFormat: prettyMessage,
  });
}

/**
 * A request: `GET /v1/pets/42 200 3 ms id=<request id>`, the status coloured by its class. Nest's
 * own lines: `[Context] message`.
 */
export const prettyMessage: MessageFormatFunc = (line, messageKey, _levelLabel, { colors }) => {
  const request = typeof line.request === 'object' && line.request !== null ? line.request : {};
  const response = typeof line.response === 'object' && line.response !== null ? line.response : {};
  const requestId = textOf('id' in request ? request.id : null);
  const id = requestId === '' ? '' : ` ${colors.gray(`id=${requestId}`)}`;
  const status = 'status' in response ? response.status : null;
  if (typeof status === 'number') {
    const paint =
      status >= 500 ? colors.red : status >= 400 ? colors.yellow : status >= 300 ? colors.cyan : colors.green;
    const method = colors.bold(textOf('method' in request ? request.method : null));
    return `${method} ${textOf(line.path)} ${paint(String(status))} ${textOf(line.durationMs)} ms${id}`;
  }
  const context = textOf(line.context);
  return `${context === '' ? '' : `${colors.yellow(`[${context}]`)} `}${textOf(line[messageKey])}${id}`;
};

function textOf(value: unknown): string {
  return typeof value === 'string' || typeof value === 'number' ? String(value) : '';
}

/** Colour only for a terminal that shows it (Node's check honours NO_COLOR, FORCE_COLOR and TERM). */
function hasColours(stream: NodeJS.WriteStream): boolean {
  return stream.isTTY && stream.hasColors();
}

/**
 * The one buffered writer on stdout (file descriptor 1), for the process, not provided: two writers
 * on one descriptor would interleave their batches, and main.ts flushes it after the app has
 * closed (flushLog), when no provider is left to ask.
 */
let stdout: ReturnType<typeof pino.destination> | null = null;

function stdoutDestination(): ReturnType<typeof pino.destination> {
  stdout ??= pino.destination({ dest: 1, sync: false, minLength: 4096, periodicFlush: 1000 });
  return stdout;
}

/**
 * Text for the terminal on stdout (the first-run key banner), in the log's own buffer when the JSON
 * log holds one: a write beside it could overtake lines still buffered (a flush asked for while a
 * batch is being written calls back without writing what came after that batch).
 */
export function printOnStdout(text: string): void {
  if (stdout === null) process.stdout.write(text);
  else stdout.write(text);
}

/**
 * Writes out what the stdout log still holds: before the process exits, and after the first-run
 * key banner, so that it shows at once. pino's own flush at exit is
 * synchronous, and a synchronous write that meets a reader gone away (`main.js | head`, EPIPE) is
 * retried forever by sonic-boom, so the process never exits. An asynchronous one that meets EPIPE
 * makes pino stop writing, and the exit then goes through.
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
export function startupLogger(log: LogSettings, dest: 1 | 2 = 1): Logger {
  if (log.pretty)
    return pino({ level: log.level }, prettyStream(dest, hasColours(dest === 1 ? process.stdout : process.stderr)));
  return pino({ level: log.level }, pino.destination({ dest, sync: true }));
}
