import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { ERROR_CODES, type ErrorCode, type ErrorResponse } from './api-error.js';

const CODE_BY_STATUS = new Map<number, ErrorCode>(
  Object.entries(ERROR_CODES).map(([status, code]) => [Number(status), code]),
);

/**
 * The Error body, built here only: the error filter, the Express fallbacks (app.ts) and the answers
 * Node's own protocol handling writes before Express (node-protocol.ts) all send what this returns.
 * A status the table does not name (417, 431, ...) gets the code of its class.
 */
export function errorBody(status: number, message: string): ErrorResponse {
  return { code: CODE_BY_STATUS.get(status) ?? (status < 500 ? 'invalid_request' : 'internal_error'), message, status };
}

/** Sends an Error body on any Node response (Express's included) whose head is not out yet. */
export function writeErrorBody(response: ServerResponse, body: ErrorResponse, headers: OutgoingHttpHeaders): void {
  const json = JSON.stringify(body);
  response.writeHead(body.status, { ...headers, ...errorBodyHeaders(json) });
  response.end(json);
}

/** The headers that describe an Error body (its JSON as sent). */
export function errorBodyHeaders(json: string): { 'Content-Type': string; 'Content-Length': number } {
  return { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(json) };
}
