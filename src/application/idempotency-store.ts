import type { PetRepository } from '../domain/pet-repository.js';

/** Who sent the request (a digest of its API key, never the key) and the Idempotency-Key it sent. */
export type IdempotentRequest = { caller: string; key: string; fingerprint: string };

/** What the first request was answered, kept to answer its retries identically. */
export type StoredResponse = { status: number; body: string; location: string | null };

export type IdempotentOutcome = { response: StoredResponse; replayed: boolean };

/** A request with the same Idempotency-Key is still being processed. */
export class IdempotencyConflictError extends Error {
  constructor() {
    super('A request with this Idempotency-Key is still in flight');
    this.name = 'IdempotencyConflictError';
  }
}

/** The Idempotency-Key was used before with a different request body. */
export class IdempotencyKeyReusedError extends Error {
  constructor() {
    super('This Idempotency-Key was used with a different request body');
    this.name = 'IdempotencyKeyReusedError';
  }
}

/**
 * Runs a create at most once per (caller, key) within the retention period. `create` is given the
 * pets of the store's transaction, which also writes the record of its response: both are kept,
 * or neither (a failure leaves the key free for a retry). Throws IdempotencyConflictError or
 * IdempotencyKeyReusedError.
 */
export abstract class IdempotencyStore {
  abstract once(request: IdempotentRequest, create: (pets: PetRepository) => Promise<StoredResponse>): Promise<IdempotentOutcome>;
}
