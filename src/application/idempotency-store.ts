import type { Pet } from '../domain/pet.js';
import type { PetRepository } from '../domain/pet-repository.js';

/** A create the client may retry: who sent it (a digest of its API key, never the key), its Idempotency-Key, and what it asked for. */
export type IdempotentCreate = { caller: string; key: string; fingerprint: string };

/** A request with the same Idempotency-Key is still being processed. */
export class IdempotencyConflictError extends Error {
  constructor() {
    super('A request with this Idempotency-Key is still in flight');
    this.name = 'IdempotencyConflictError';
  }
}

/** The Idempotency-Key was used before with a different request. */
export class IdempotencyKeyReusedError extends Error {
  constructor() {
    super('This Idempotency-Key was used with a different request body');
    this.name = 'IdempotencyKeyReusedError';
  }
}

/**
 * Runs a create at most once per (caller, key) within the retention period and keeps the pet it
 * created, so that a retry gets the same pet. `create` is given the pets of the store's
 * transaction, which also writes the record: both are kept, or neither (a failure leaves the key
 * free for a retry). Throws IdempotencyConflictError or IdempotencyKeyReusedError.
 */
export abstract class IdempotencyStore {
  abstract once(
    request: IdempotentCreate,
    create: (pets: PetRepository) => Promise<Pet>,
  ): Promise<{ pet: Pet; replayed: boolean }>;
}
