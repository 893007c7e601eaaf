import { newPet, type NewPetInput, type Pet } from '../domain/pet.js';
import type { PetRepository } from '../domain/pet-repository.js';
import type { IdempotencyStore } from './idempotency-store.js';

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
