import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, Response } from 'express';
import { ApiError, type ErrorResponse } from './api-error.js';
import { errorBody, writeErrorBody } from './error-body.js';
import { pathOf } from './request-path.js';
import { StoreUnavailableError } from '../../../application/platform/store-unavailable-error.js';

/** Seconds a client should wait before retrying when the database does not answer. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

export type ErrorReply = { body: ErrorResponse; headers: Record<string, string> };

/** What the filter needs of a request: Express's, or a plain object in a test. */
export type RequestLine = { method: string; originalUrl: string };

/**
 * Where failures become HTTP. Pure, so each case is unit-tested. Order: our own ApiError (the
 * product's errors arrive as one, from PetErrorsFilter), a store that does not answer, then a
 * client error of what the edge runs on, then anything else as a 500 that reveals nothing (and is
 * logged, by answerWithError).
 */
export function toErrorResponse(exception: unknown, request: RequestLine): ErrorReply {
  if (exception instanceof ApiError) return reply(exception.getStatus(), exception.message, exception.headers);
  if (exception instanceof StoreUnavailableError) {
    return reply(503, 'The service cannot reach its database; retry later', {
      'Retry-After': String(UNAVAILABLE_RETRY_AFTER_SECONDS),
    });
  }
  if (isUndecodablePath(exception) || (exception instanceof HttpException && isUndecodablePath(exception.cause)))
    return reply(400, 'Request path is not valid percent-encoded UTF-8');
  const status = clientErrorStatusOf(exception);
  if (status === 404) return reply(404, `No route for ${request.method} ${pathOf(request).slice(0, 200)}`);
  if (status !== null) return reply(status, 'Invalid request');
  return reply(500, 'Internal server error');
}

function reply(status: number, message: string, headers: Record<string, string> = {}): ErrorReply {
  return { body: errorBody(status, message), headers };
}

/**
 * The 4xx of an error that says it is meant for the client: Nest's HttpExceptions (an unknown
 * route, 404; not one made of an error marked for no client), and what http-errors builds for the libraries under Nest (body reading, Swagger
 * UI's static files), which it marks `expose` for a 4xx. A status on anything else (a driver's or
 * a client library's error with `status: 404`) is not the client's fault: null, so a logged 500.
 */
function clientErrorStatusOf(exception: unknown): number | null {
  const status =
    exception instanceof HttpException
      ? markedNotForClient(exception.cause)
        ? null
        : exception.getStatus()
      : typeof exception === 'object' && exception !== null && 'expose' in exception && exception.expose === true
        ? statusOf(exception)
        : null;
  return typeof status === 'number' && Number.isInteger(status) && status >= 400 && status < 500 ? status : null;
}

/**
 * Nest's ExpressAdapter (mapException) makes an HttpException of any http-errors 4xx, one marked
 * `expose: false` too, with that error as its cause: it stays not for the client.
 */
function markedNotForClient(cause: unknown): boolean {
  return typeof cause === 'object' && cause !== null && 'expose' in cause && cause.expose === false;
}

function statusOf(exception: object): unknown {
  return 'status' in exception ? exception.status : 'statusCode' in exception ? exception.statusCode : null;
}

/**
 * The one client error the edge knows by name: the Express router's, for a path parameter that is
 * not percent-encoded UTF-8 (`GET /v1/pets/%E0`). router's decodeParam() turns decodeURIComponent's
 * URIError into a 400, but without `expose`. On Nest's routes it arrives as the `cause` of the
 * BadRequestException Nest's ExpressAdapter makes of it (mapException); elsewhere as it is.
 */
function isUndecodablePath(exception: unknown): boolean {
  return (
    exception instanceof URIError &&
    exception.message.startsWith('Failed to decode param ') &&
    statusOf(exception) === 400
  );
}

const logger = new Logger('ErrorFilter');

/**
 * Set before the failure, they no longer describe the Error body: a static file's type, range or
 * validators, or the Location of a pet whose transaction then failed.
 */
const STALE_HEADERS = ['Content-Type', 'Content-Range', 'Content-Disposition', 'ETag', 'Last-Modified', 'Location'];

/** Answers any failure with the Error body. Used by the filter and, outside /v1, by app.ts. */
export function answerWithError(
  exception: unknown,
  request: IncomingMessage & RequestLine,
  response: ServerResponse,
): void {
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
  writeErrorBody(response, body, bodyReceived(request) ? headers : { ...headers, Connection: 'close' });
}

/**
 * Nothing more is to come: the body was read, or none was announced. (A request answered while
 * Node is still parsing its head, by a middleware, is not yet `complete` even without a body.)
 */
function bodyReceived(request: IncomingMessage): boolean {
  return (
    request.complete ||
    (request.headers['transfer-encoding'] === undefined && Number(request.headers['content-length'] ?? 0) === 0)
  );
}

@Catch()
export class ErrorFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    answerWithError(exception, http.getRequest<Request>(), http.getResponse<Response>());
  }
}
