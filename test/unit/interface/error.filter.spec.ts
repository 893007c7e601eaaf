import { expect } from '@jest/globals';
import { HttpException, NotFoundException } from '@nestjs/common';
import { IdempotencyConflictError, IdempotencyKeyReusedError } from '../../../src/application/idempotency-store.js';
import { InvalidPetError, PetNotFoundError, StoreUnavailableError } from '../../../src/domain/errors.js';
import { ApiError } from '../../../src/interface/http/api-error.js';
import { toErrorResponse } from '../../../src/interface/http/error.filter.js';

const request = { method: 'GET', originalUrl: '/v1/somewhere?x=1' };

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

  it('names a path the Express router cannot decode', () => {
    const error = Object.assign(new URIError("Failed to decode param '%ff'"), { status: 400, statusCode: 400 });

    expect(toErrorResponse(error, request).body).toEqual({
      code: 'invalid_request',
      message: 'Request path is not valid percent-encoded UTF-8',
      status: 400,
    });
  });

  it('maps another client error of the framework by its status, with a message that reveals nothing', () => {
    expect(toErrorResponse(new HttpException('Method Not Allowed', 405), request).body).toEqual({
      code: 'method_not_allowed',
      message: 'Invalid request',
      status: 405,
    });
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
