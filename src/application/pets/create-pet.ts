import { newPet, type NewPetInput, type Pet } from '../../domain/pets/pet.js';
import type { PetRepository } from '../../domain/pets/pet-repository.js';
import { IdempotencyKeyReusedError } from './errors.js';
import type { PetTransactions, RetryKey } from './ports.js';

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
