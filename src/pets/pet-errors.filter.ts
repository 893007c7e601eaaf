import { type ArgumentsHost, Catch, type ExceptionFilter } from '@nestjs/common';
import type { Request, Response } from 'express';
import { IdempotencyConflictError, IdempotencyKeyReusedError } from '../application/create-pet.js';
import { InvalidPetError, PetNotFoundError } from '../domain/pet.js';
import { ApiError } from '../platform/http/api-error.js';
import { answerWithError } from '../platform/http/error.filter.js';

type PetError = PetNotFoundError | InvalidPetError | IdempotencyConflictError | IdempotencyKeyReusedError;

/** How the errors of the domain and the use cases are answered. Pure, so each case is unit-tested. */
export function apiErrorOf(exception: PetError): ApiError {
  if (exception instanceof PetNotFoundError) return new ApiError(404, `Pet ${exception.id} does not exist`);
  if (exception instanceof InvalidPetError)
    return new ApiError(400, `Invalid request body: ${exception.problems.join('; ')}`);
  if (exception instanceof IdempotencyConflictError) {
    return new ApiError(409, 'A request with this Idempotency-Key is still being processed; retry shortly', {
      'Retry-After': '1',
    });
  }
  return new ApiError(422, 'This Idempotency-Key was already used with a different request body; use a new key');
}

/**
 * The pets controller's errors, as ApiErrors written by the platform's ErrorFilter; whatever
 * else fails there (a store that does not answer, a bug) goes to that filter as it is.
 */
@Catch(PetNotFoundError, InvalidPetError, IdempotencyConflictError, IdempotencyKeyReusedError)
export class PetErrorsFilter implements ExceptionFilter {
  catch(exception: PetError, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    answerWithError(apiErrorOf(exception), http.getRequest<Request>(), http.getResponse<Response>());
  }
}
