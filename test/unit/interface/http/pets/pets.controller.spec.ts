import { IdempotencyConflictError, IdempotencyKeyReusedError } from '../../../../../src/application/pets/errors.js';
import { InvalidPetError, PetNotFoundError } from '../../../../../src/domain/pets/pet.js';
import { apiErrorOf } from '../../../../../src/interface/http/pets/pets.controller.js';
import { toErrorResponse } from '../../../../../src/interface/http/platform/error.filter.js';

const request = { method: 'GET', originalUrl: '/v1/pets/7' };
const answerOf = (error: Parameters<typeof apiErrorOf>[0]) => toErrorResponse(apiErrorOf(error), request);

describe('apiErrorOf', () => {
  it('answers a pet that does not exist with 404 not_found naming it', () => {
    expect(answerOf(new PetNotFoundError(7))).toEqual({
      body: { code: 'not_found', message: 'Pet 7 does not exist', status: 404 },
      headers: {},
    });
  });

  it('answers a pet that breaks a rule with one 400 naming every problem', () => {
    expect(answerOf(new InvalidPetError(['name must be a string', 'categoryId must be an integer'])).body).toEqual({
      code: 'invalid_request',
      message: 'Invalid request body: name must be a string; categoryId must be an integer',
      status: 400,
    });
  });

  it('answers the idempotency errors with 409 (with Retry-After) and 422', () => {
    expect(answerOf(new IdempotencyConflictError())).toEqual({
      body: { code: 'idempotency_conflict', message: expect.stringContaining('Idempotency-Key'), status: 409 },
      headers: { 'Retry-After': '1' },
    });
    expect(answerOf(new IdempotencyKeyReusedError())).toEqual({
      body: { code: 'idempotency_key_reused', message: expect.stringContaining('Idempotency-Key'), status: 422 },
      headers: {},
    });
  });
});
