import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FILTER_CATCH_EXCEPTIONS } from '@nestjs/common/constants.js';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js';
import {
  IdempotencyConflictError,
  IdempotencyKeyReusedError,
  UnguardedStoreError,
  WritersStillInFlightError,
} from '../../../../../src/application/pets/errors.js';
import { InvalidPetError, PetNotFoundError } from '../../../../../src/domain/pets/pet.js';
import { StaleMarkError } from '../../../../../src/domain/pets/pet-repository.js';
import { apiErrorOf, PET_ERRORS, PetErrorsFilter } from '../../../../../src/interface/http/pets/pet-errors.filter.js';
import { toErrorResponse } from '../../../../../src/interface/http/platform/error.filter.js';

const request = { method: 'GET', originalUrl: '/v1/pets/7' };
const answerOf = (error: Error) => toErrorResponse(apiErrorOf(error), request);

describe('the answers to the errors of the domain and the use cases', () => {
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

  it('answers creates that did not settle in time with 503 and Retry-After', () => {
    expect(answerOf(new WritersStillInFlightError())).toEqual({
      body: {
        code: 'unavailable',
        message: 'Pets created a moment ago have not settled yet; retry shortly',
        status: 503,
      },
      headers: { 'Retry-After': '1' },
    });
  });

  it('answers a page whose database changed under it, and a store that cannot vouch for its ids, with 503 and Retry-After', () => {
    expect(answerOf(new StaleMarkError())).toEqual({
      body: { code: 'unavailable', message: 'The database changed while the page was read; retry', status: 503 },
      headers: { 'Retry-After': '1' },
    });
    // What is off is for the log, never for the client.
    expect(answerOf(new UnguardedStoreError('the pets trigger pets_refuse_id is disabled'))).toEqual({
      body: {
        code: 'unavailable',
        message: 'The service cannot vouch for the pets it would list now; retry later',
        status: 503,
      },
      headers: { 'Retry-After': '5' },
    });
  });

  it('leaves an error it does not list to the platform, which answers 500: never a 4xx by default', () => {
    // Shaped like the idempotency and settle errors, which once made it a 422.
    class NewUseCaseError extends Error {}
    const error = new NewUseCaseError('a case nobody mapped');

    expect(apiErrorOf(error)).toBe(error);
    expect(answerOf(error).body).toEqual({ code: 'internal_error', message: 'Internal server error', status: 500 });
  });

  it('matches each error to one row only, so that the order of the list does not matter', () => {
    for (const error of [
      new IdempotencyKeyReusedError(),
      new WritersStillInFlightError(),
      new IdempotencyConflictError(),
      new StaleMarkError(),
      new UnguardedStoreError('a problem'),
    ]) {
      const rows = PET_ERRORS.filter(({ type }) => error instanceof type);

      expect(rows).toHaveLength(1);
    }
  });

  it('catches exactly the errors the list names, so that the two cannot drift apart', () => {
    expect(Reflect.getMetadata(FILTER_CATCH_EXCEPTIONS, PetErrorsFilter)).toEqual(PET_ERRORS.map(({ type }) => type));
    expect(PET_ERRORS.map(({ type }) => type.name)).toEqual([
      'PetNotFoundError',
      'InvalidPetError',
      'IdempotencyConflictError',
      'IdempotencyKeyReusedError',
      'WritersStillInFlightError',
      'StaleMarkError',
      'UnguardedStoreError',
    ]);
  });

  it('writes the answer as the Error body, with its headers', async () => {
    const server = createServer((request, response) => {
      const line = { method: request.method ?? 'GET', originalUrl: request.url ?? '/' };
      new PetErrorsFilter().catch(
        new IdempotencyConflictError(),
        new ExecutionContextHost([Object.assign(request, line), response]),
      );
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;

    try {
      const response = await fetch(`http://127.0.0.1:${port}/v1/pets`, { method: 'POST' });

      expect(response.status).toBe(409);
      expect(response.headers.get('retry-after')).toBe('1');
      expect(await response.json()).toEqual({
        code: 'idempotency_conflict',
        message: 'A request with this Idempotency-Key is still being processed; retry shortly',
        status: 409,
      });
    } finally {
      server.close();
    }
  });
});
