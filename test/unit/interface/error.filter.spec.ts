import { HttpException, NotFoundException } from '@nestjs/common';
import { IdempotencyConflictError, IdempotencyKeyReusedError } from '../../../src/application/idempotency-store.js';
import { InvalidPetError, PetNotFoundError, StoreUnavailableError } from '../../../src/domain/errors.js';
import { ApiError } from '../../../src/interface/http/api-error.js';
import { toErrorResponse } from '../../../src/interface/http/error.filter.js';

const request = { method: 'GET', originalUrl: '/v1/somewhere?x=1' };

/** What body-parser and the Express router throw: http-errors objects. */
function httpError(status: number, type: string, message = 'x'): Error {
  return Object.assign(new Error(message), { status, statusCode: status, type, expose: true });
}

describe('toErrorResponse', () => {
  it('writes an ApiError as it is, with its headers', () => {
    const reply = toErrorResponse(
      new ApiError(401, 'Invalid API key', { 'WWW-Authenticate': 'Bearer realm="petstore"' }),
      request,
    );

    expect(reply).toEqual({
      body: { code: 'unauthorized', message: 'Invalid API key', status: 401 },
      headers: { 'WWW-Authenticate': 'Bearer realm="petstore"' },
    });
  });

  it('maps the three domain errors', () => {
    expect(toErrorResponse(new PetNotFoundError(7), request).body).toEqual({
      code: 'not_found',
      message: 'Pet 7 does not exist',
      status: 404,
    });
    expect(
      toErrorResponse(new InvalidPetError(['name must be a string', 'categoryId must be an integer']), request).body,
    ).toEqual({
      code: 'invalid_request',
      message: 'Invalid request body: name must be a string; categoryId must be an integer',
      status: 400,
    });
    expect(toErrorResponse(new StoreUnavailableError(), request)).toEqual({
      body: { code: 'unavailable', message: expect.stringContaining('database'), status: 503 },
      headers: { 'Retry-After': '5' },
    });
  });

  it('maps the idempotency errors to 409 (with Retry-After) and 422', () => {
    expect(toErrorResponse(new IdempotencyConflictError(), request)).toEqual({
      body: { code: 'idempotency_conflict', message: expect.stringContaining('Idempotency-Key'), status: 409 },
      headers: { 'Retry-After': '1' },
    });
    expect(toErrorResponse(new IdempotencyKeyReusedError(), request).body).toEqual({
      code: 'idempotency_key_reused',
      message: expect.stringContaining('Idempotency-Key'),
      status: 422,
    });
  });

  it('answers an unknown route with not_found naming the path', () => {
    expect(toErrorResponse(new NotFoundException(), request).body).toEqual({
      code: 'not_found',
      message: 'No route for GET /v1/somewhere',
      status: 404,
    });
  });

  it.each([
    [httpError(413, 'entity.too.large'), 413, 'payload_too_large', 'Request body exceeds the 16 KiB limit'],
    [
      httpError(400, 'entity.parse.failed', 'Unexpected token } in JSON at position 9'),
      400,
      'invalid_request',
      'Request body is not valid JSON',
    ],
    [
      httpError(415, 'encoding.unsupported'),
      415,
      'unsupported_media_type',
      'Content-Encoding must be gzip, deflate, br or identity',
    ],
    [httpError(400, 'request.aborted'), 400, 'invalid_request', 'Request body was not received completely'],
    [new HttpException('Method Not Allowed', 405), 405, 'method_not_allowed', 'Invalid request'],
  ])('maps body-parser and framework errors: %s', (error, status, code, message) => {
    expect(toErrorResponse(error, request).body).toEqual({ code, message, status });
  });

  it('turns anything else into a 500 that reveals nothing', () => {
    const reply = toErrorResponse(
      new Error('duplicate key value violates unique constraint "pets_pkey" SELECT * FROM pets'),
      request,
    );

    expect(reply).toEqual({
      body: { code: 'internal_error', message: 'Internal server error', status: 500 },
      headers: {},
    });
  });

  it('does not trust a 5xx status on a foreign error', () => {
    expect(toErrorResponse(Object.assign(new Error('secret detail'), { status: 502 }), request).body).toEqual({
      code: 'internal_error',
      message: 'Internal server error',
      status: 500,
    });
  });
});
