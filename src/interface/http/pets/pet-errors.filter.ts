import { type ArgumentsHost, Catch, type ExceptionFilter, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import {
  IdempotencyConflictError,
  IdempotencyKeyReusedError,
  UnguardedStoreError,
  WritersStillInFlightError,
} from '../../../application/pets/errors.js';
import { InvalidPetError, PetNotFoundError } from '../../../domain/pets/pet.js';
import { StaleMarkError } from '../../../domain/pets/pet-repository.js';
import { ApiError } from '../platform/api-error.js';
import { answerWithError } from '../platform/error.filter.js';
import { invalidBody } from '../platform/validation-errors.js';

/** One row of PET_ERRORS: an error class and its answer, which takes the error as that class. */
function answer<E extends Error>(
  type: new (...args: never[]) => E,
  apiErrorOf: (error: E) => ApiError,
): { type: new (...args: never[]) => Error; answerTo: (error: unknown) => ApiError | undefined } {
  return { type, answerTo: (error) => (error instanceof type ? apiErrorOf(error) : undefined) };
}

/**
 * How the errors of the domain and the use cases are answered: the one list of them, which
 * PetErrorsFilter catches. An error it does not name is not caught there: the platform's
 * ErrorFilter answers it with a 500 and logs it, so a new error is a bug to see, not a 4xx.
 */
export const PET_ERRORS = [
  answer(PetNotFoundError, (error) => new ApiError(404, `Pet ${error.id} does not exist`)),
  answer(InvalidPetError, (error) => invalidBody(error.problems)),
  answer(
    IdempotencyConflictError,
    () =>
      new ApiError(409, 'A request with this Idempotency-Key is still being processed; retry shortly', {
        'Retry-After': '1',
      }),
  ),
  answer(
    IdempotencyKeyReusedError,
    () => new ApiError(422, 'This Idempotency-Key was already used with a different request body; use a new key'),
  ),
  // Not an unreachable database: a create in flight outlasted its limits, which should not happen.
  answer(
    WritersStillInFlightError,
    () => new ApiError(503, 'Pets created a moment ago have not settled yet; retry shortly', { 'Retry-After': '1' }),
  ),
  // The database changed under the page (a failover or a restore between its mark and its rows).
  answer(
    StaleMarkError,
    () => new ApiError(503, 'The database changed while the page was read; retry', { 'Retry-After': '1' }),
  ),
  // What is off is the operators' to mend, and said in the log (PetErrorsFilter): the client learns only to come back.
  answer(
    UnguardedStoreError,
    () =>
      new ApiError(503, 'The service cannot vouch for the pets it would list now; retry later', {
        'Retry-After': '5',
      }),
  ),
];

/** The answer PET_ERRORS gives `error`; any other error as it is, for the platform's ErrorFilter. */
export function apiErrorOf(error: unknown): unknown {
  for (const row of PET_ERRORS) {
    const apiError = row.answerTo(error);
    if (apiError !== undefined) return apiError;
  }
  return error;
}

/** The pets controller's errors, as ApiErrors written by the platform's ErrorFilter. */
@Catch(...PET_ERRORS.map(({ type }) => type))
export class PetErrorsFilter implements ExceptionFilter {
  private readonly logger = new Logger('Pets');
  /** Said once while it lasts: every list and create would say it again. */
  private unguarded: string | null = null;

  catch(exception: unknown, host: ArgumentsHost): void {
    if (exception instanceof UnguardedStoreError && exception.problem !== this.unguarded)
      this.logger.warn(`Answered 503 until an operator mends it: ${exception.problem}`);
    if (exception instanceof UnguardedStoreError) this.unguarded = exception.problem;
    const http = host.switchToHttp();
    answerWithError(apiErrorOf(exception), http.getRequest<Request>(), http.getResponse<Response>());
  }
}
