import { ApiResponse } from '@nestjs/swagger';
import { ERROR_CODES, type ErrorStatus, ErrorResponse } from './api-error.js';

// The answers the platform gives every operation (the Error body, rate limits, the key, Node's 431),
// as OpenAPI declarations for the operations to list.

export type HeaderObject = { description: string; required: boolean; schema: { type: 'string' } };

/** A response header; `required` ones are checked on every e2e response (test/support/contract.ts). */
export const header = (description: string, required = true): HeaderObject => ({
  description,
  required,
  schema: { type: 'string' },
});

const rateLimit = header(
  'IETF draft "RateLimit header fields for HTTP": where the counter stands, as `"<policy>";r=<requests remaining>;t=<seconds until the window resets>`. On a 429 the first item names the policy that refused the request.',
);
const rateLimitPolicy = header(
  'IETF draft "RateLimit header fields for HTTP": the limit, as `"<policy>";q=<requests>;w=<window in seconds>`. The policies are `"per-key"` (requests per API key) and `"failed-auth"` (wrong keys per client address).',
);

/**
 * Every answer to a request with a key carries the RateLimit fields while rate limiting is on
 * (RATE_LIMIT): of `"per-key"` once the key is accepted, of `"failed-auth"` on a 401 for a wrong
 * key. A 429 always carries them. Node's own 431 comes before any key is read.
 */
export const rateLimitHeaders = (required: boolean): Record<string, HeaderObject> => ({
  RateLimit: { ...rateLimit, required },
  'RateLimit-Policy': { ...rateLimitPolicy, required },
});

/** An Error response, with an example body of its own status (not the schema's generic one). */
export const error = (status: ErrorStatus, description: string, headers: Record<string, HeaderObject> = {}) =>
  ApiResponse({
    status,
    description,
    type: ErrorResponse,
    headers: { ...headers, ...rateLimitHeaders(status === 429) },
    example: { code: ERROR_CODES[status], message: description, status },
  });

// The answers every operation shares; `headers` are the operation's own (getPet's deprecation).
export const unauthorized = (headers: Record<string, HeaderObject> = {}) =>
  error(401, 'Missing or invalid API key.', {
    ...headers,
    'WWW-Authenticate': header(
      '`Bearer realm="petstore"`, with `error="invalid_token"` when a key was presented but is wrong (RFC 6750).',
    ),
  });
export const unavailable = (headers: Record<string, HeaderObject> = {}) =>
  error(503, 'The database does not answer; retry after the given delay.', {
    ...headers,
    'Retry-After': header('Seconds to wait before retrying.'),
  });
export const internal = (headers: Record<string, HeaderObject> = {}) =>
  error(500, 'Unexpected failure; the body reveals nothing of it.', headers);
/** Node's HTTP parser answers this before any route, for any path. */
export const headersTooLarge = ApiResponse({
  status: 431,
  description: 'The request header section exceeds 16 KiB.',
  type: ErrorResponse,
  example: { code: 'invalid_request', message: 'Request header section exceeds 16 KiB', status: 431 },
});
export const rateLimited = (headers: Record<string, HeaderObject> = {}) =>
  error(
    429,
    'Too many requests for this API key (policy `"per-key"`), or too many wrong keys from this address (policy `"failed-auth"`).',
    { ...headers, 'Retry-After': header('Seconds to wait before retrying.') },
  );
