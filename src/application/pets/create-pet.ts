import { newPet, type NewPetInput, type Pet } from '../../domain/pets/pet.js';
import type { PetRepository } from '../../domain/pets/pet-repository.js';

/** Makes a create safe to retry: the caller (a digest of its API key) and its Idempotency-Key. */
export type RetryKey = { caller: string; key: string };

export type CreatedPet = { pet: Pet; replayed: boolean };

export class CreatePet {
  constructor(
    private readonly pets: PetRepository,
    private readonly idempotency: IdempotencyStore,
  ) {}

  /**
   * The pet is checked first, so an invalid one opens no transaction and leaves the key free.
   * With a retry key, a repeat of the same request returns the pet the first one created.
   */
  async execute(input: NewPetInput, retry?: RetryKey): Promise<CreatedPet> {
    const pet = newPet(input);
    if (retry === undefined) return { pet: await this.pets.add(pet), replayed: false };
    // What the client asked for, whatever the layout of its JSON: a status sent differs from one omitted.
    const fingerprint = JSON.stringify([pet.name, pet.categoryId, input.status ?? null]);
    return this.idempotency.once({ ...retry, fingerprint }, (pets) => pets.add(pet));
  }
}

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
