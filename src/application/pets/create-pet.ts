import { newPet, type NewPetInput, type Pet } from '../../domain/pets/pet.js';
import type { PetRepository } from '../../domain/pets/pet-repository.js';

/** Makes a create safe to retry: the caller (a digest of its API key, never the key) and its Idempotency-Key. */
export type RetryKey = { caller: string; key: string };

export type CreatedPet = { pet: Pet; replayed: boolean };

export class CreatePet {
  constructor(
    private readonly pets: PetRepository,
    private readonly transactions: PetTransactions,
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

    // The pet and its record are kept together or not at all: a failure leaves the key free for a retry.
    return this.transactions.run(async ({ pets, keys }) => {
      await keys.claim(retry);
      const previous = await keys.find(retry);
      if (previous !== null) {
        if (previous.fingerprint !== fingerprint) throw new IdempotencyKeyReusedError();
        const original = await pets.findById(previous.petId);
        if (original === null)
          throw new Error(`idempotency record points at pet ${previous.petId}, which does not exist`);
        return { pet: original, replayed: true };
      }
      const created = await pets.add(pet);
      await keys.remember(retry, { fingerprint, petId: created.id });
      return { pet: created, replayed: false };
    });
  }
}

/** What a keyed create remembers: what was asked for, and the pet it made. */
export type IdempotencyRecord = { fingerprint: string; petId: number };

/**
 * The creates remembered per retry key, in one transaction of PetTransactions, which hands it out
 * (no DI token of its own). Every method may throw StoreUnavailableError.
 */
export abstract class IdempotencyKeys {
  /** Holds the key until the transaction ends, or throws IdempotencyConflictError while another one holds it. */
  abstract claim(key: RetryKey): Promise<void>;
  /** The record of an earlier create with this key, while it is remembered (24 hours); else null. */
  abstract find(key: RetryKey): Promise<IdempotencyRecord | null>;
  /** Remembers the create for the retention period, from the transaction's commit on. */
  abstract remember(key: RetryKey, record: IdempotencyRecord): Promise<void>;
}

/** The pets and the retry keys of one transaction. */
export type PetTransaction = { pets: PetRepository; keys: IdempotencyKeys };

/**
 * One transaction around `work`: what it writes is kept if it resolves, and none of it if it
 * throws (its error goes out as it was, or StoreUnavailableError when the store failed). The class
 * is also the DI token.
 */
export abstract class PetTransactions {
  abstract run<T>(work: (transaction: PetTransaction) => Promise<T>): Promise<T>;
}

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
