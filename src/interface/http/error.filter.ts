import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Request, Response } from 'express';
import { IdempotencyConflictError, IdempotencyKeyReusedError } from '../../application/idempotency-store.js';
import { InvalidPetError, PetNotFoundError, StoreUnavailableError } from '../../domain/errors.js';
import { ApiError, ERROR_CODES, type ErrorCode, type ErrorResponse } from './api-error.js';
import { JSON_BODY_LIMIT } from './json-body.guard.js';

/** Seconds a client should wait before retrying when the database does not answer. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

export type ErrorReply = { body: ErrorResponse; headers: Record<string, string> };

/**
 * The one place where failures become HTTP. Pure, so each case is unit-tested. Order: our own
 * ApiError, then domain and application errors, then framework and body-parser errors, then anything else as a
 * 500 that reveals nothing.
 */
export function toErrorResponse(exception: unknown, request: { method: string; originalUrl: string }): ErrorReply {
  if (exception instanceof ApiError) return reply(exception.status, exception.message, exception.headers);
  if (exception instanceof PetNotFoundError) return reply(404, `Pet ${exception.id} does not exist`);
  if (exception instanceof InvalidPetError) return reply(400, `Invalid request body: ${exception.problems.join('; ')}`);
  if (exception instanceof StoreUnavailableError) {
    return reply(503, 'The service cannot reach its database; retry later', {
      'Retry-After': String(UNAVAILABLE_RETRY_AFTER_SECONDS),
    });
  }
  if (exception instanceof IdempotencyConflictError) {
    return reply(409, 'A request with this Idempotency-Key is still being processed; retry shortly', {
      'Retry-After': '1',
    });
  }
  if (exception instanceof IdempotencyKeyReusedError) {
    return reply(422, 'This Idempotency-Key was already used with a different request body; use a new key');
  }
  const status = httpStatusOf(exception);
  if (status !== null && status >= 400 && status < 500)
    return reply(status, clientErrorMessage(status, exception, request));
  return reply(500, 'Internal server error');
}

function reply(status: number, message: string, headers: Record<string, string> = {}): ErrorReply {
  return { body: { code: codeFor(status), message, status }, headers };
}

const CODE_BY_STATUS = new Map<number, ErrorCode>(
  Object.entries(ERROR_CODES).map(([status, code]) => [Number(status), code]),
);

function codeFor(status: number): ErrorCode {
  return CODE_BY_STATUS.get(status) ?? (status < 500 ? 'invalid_request' : 'internal_error');
}

/** Nest HttpExceptions, and http-errors objects from body-parser and the Express router. */
function httpStatusOf(exception: unknown): number | null {
  if (exception instanceof HttpException) return exception.getStatus();
  if (typeof exception === 'object' && exception !== null) {
    const status = 'status' in exception ? exception.status : 'statusCode' in exception ? exception.statusCode : null;
    if (typeof status === 'number' && Number.isInteger(status)) return status;
  }
  return null;
}

function clientErrorMessage(
  status: number,
  exception: unknown,
  request: { method: string; originalUrl: string },
): string {
  const type = typeof exception === 'object' && exception !== null && 'type' in exception ? exception.type : null;
  switch (status) {
    case 404:
      return `No route for ${request.method} ${pathOf(request).slice(0, 200)}`;
    case 413:
      return `Request body exceeds the ${JSON_BODY_LIMIT / 1024} KiB limit`;
    case 415:
      if (type === 'encoding.unsupported') return 'Content-Encoding must be gzip, deflate, br or identity';
      return 'Content-Type must be application/json';
  }
  if (type === 'entity.parse.failed') return 'Request body is not valid JSON';
  if (type === 'request.aborted') return 'Request body was not received completely';
  if (type === 'encoding.invalid') return 'Request body is not valid UTF-8';
  if (exception instanceof Error && /^Failed to decode param/.test(exception.message))
    return 'Request path is not valid percent-encoded UTF-8';
  return 'Invalid request';
}

/** The path as the client sent it (under /v1 too), without the query. */
function pathOf(request: { originalUrl: string }): string {
  return request.originalUrl.split('?', 1)[0] ?? '';
}

const logger = new Logger('ErrorFilter');

/**
 * Set before the failure, they no longer describe the Error body: a static file's type, range or
 * validators, or the Location of a pet whose transaction then failed.
 */
const STALE_HEADERS = ['Content-Type', 'Content-Range', 'Content-Disposition', 'ETag', 'Last-Modified', 'Location'];

/** Writes the Error body for any failure. Used by the filter and, outside /v1, by app.ts. */
export function answerWithError(exception: unknown, request: Request, response: Response): void {
  const { body, headers } = toErrorResponse(exception, request);
  if (body.status === 503) {
    logger.warn(`${request.method} ${pathOf(request)}: database unavailable`);
  } else if (body.status >= 500) {
    // The stack goes to the log, never to the client.
    logger.error(
      `${request.method} ${pathOf(request)} failed`,
      exception instanceof Error ? exception.stack : String(exception),
    );
  }
  if (response.headersSent) {
    response.end();
    return;
  }
  for (const stale of STALE_HEADERS) response.removeHeader(stale);
  // A body the client is still sending is not read to its end just to keep the connection:
  // the connection closes after this answer instead.
  if (!request.complete) response.setHeader('Connection', 'close');
  response.status(body.status).set(headers).json(body);
}

/** An Error body as raw HTTP/1.1, for what Node answers before Express: the connection then closes. */
export function rawErrorResponse(status: number, reason: string, message: string, head = false): string {
  const json = JSON.stringify({ code: codeFor(status), message, status });
  return (
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(json)}\r\n` +
    `X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n${head ? '' : json}`
  );
}

/**
 * Node's HTTP parser refuses some requests before any route sees them (unknown method, bytes not
 * allowed in a path or header, conflicting Content-Length, header section over 16 KiB). Answer
 * those with the Error body too, not Node's bare 400.
 */
export function answerClientError(
  error: Error & { code?: string },
  socket: Duplex,
  lastResponse: ServerResponse | undefined,
): void {
  if (!socket.writable || error.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const [status, reason, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large', 'Request header section exceeds 16 KiB']
      : [400, 'Bad Request', 'Malformed HTTP request'];
  if (lastResponse !== undefined && !lastResponse.writableFinished) {
    // The parser failed inside that request's own body (its framing): it will never be read to
    // its end, so it is answered now, and the connection closed.
    if (!lastResponse.req.complete && !lastResponse.headersSent) {
      const answer = () => {
        if (!socket.writable) return;
        // Destroyed once written: the request's reader then fails and lets go of it.
        socket.once('finish', () => socket.destroy());
        socket.end(
          rawErrorResponse(400, 'Bad Request', 'Malformed request body framing (Transfer-Encoding or chunk sizes)'),
        );
      };
      // In turn: a response queued behind others on the connection gets the socket when they are out.
      if (lastResponse.socket === null) lastResponse.once('socket', answer);
      else answer();
      return;
    }
    // Bytes behind a request whose answer is not out yet are not a request of their own: answer
    // that request, say it closes the connection, then close, rather than add an answer the client
    // never asked for. (Once an answer is out, what comes next is a new request, answered below.)
    if (!lastResponse.headersSent) lastResponse.setHeader('Connection', 'close');
    lastResponse.once('finish', () => socket.end());
    return;
  }
  // An answer to HEAD has no body, or the client would read it as the next response. The bytes
  // at hand start with the refused request only when it was the connection's first.
  const head =
    lastResponse === undefined &&
    'rawPacket' in error &&
    Buffer.isBuffer(error.rawPacket) &&
    error.rawPacket.subarray(0, 5).toString('latin1') === 'HEAD ';
  socket.end(rawErrorResponse(status, reason, message, head));
}

/**
 * Writes `answer()` on a socket Node handed over (CONNECT) once the answer still due on it is out,
 * then closes it. Nothing is written on a socket already closed, or that that answer closed.
 */
export function afterPendingAnswer(
  socket: Duplex,
  lastResponse: ServerResponse | undefined,
  answer: () => string,
): void {
  // A socket handed over has no error listener of Node's any more: an error must not stop the process.
  socket.on('error', () => socket.destroy());
  // An answer that said Connection: close was the last word on this connection.
  const write = () =>
    socket.writable && lastResponse?.shouldKeepAlive !== false ? socket.end(answer()) : socket.destroy();
  if (lastResponse !== undefined && !lastResponse.writableFinished) lastResponse.once('finish', write);
  else write();
}

/** An Error body through a response Node created before Express saw the request; the connection then closes. */
export function answerRaw(response: ServerResponse, status: number, message: string): void {
  const body = JSON.stringify({ code: codeFor(status), message, status });
  response.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'X-Content-Type-Options': 'nosniff',
    Connection: 'close',
  });
  response.end(body);
}

@Catch()
export class ErrorFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    answerWithError(exception, http.getRequest<Request>(), http.getResponse<Response>());
  }
}
