import {
  IdempotencyConflictError,
  IdempotencyKeyReusedError,
  IdempotencyStore,
  type IdempotentCreate,
} from '../../src/application/pets/create-pet.js';
import type { Pet } from '../../src/domain/pets/pet.js';
import type { PetRepository } from '../../src/domain/pets/pet-repository.js';

/**
 * An honest fake: one record per (caller, key), kept only when the create succeeded; a create
 * still running makes a second one fail with a conflict. Records never expire here.
 */
export class InMemoryIdempotencyStore extends IdempotencyStore {
  private readonly records = new Map<string, { fingerprint: string; pet: Pet }>();
  private readonly inFlight = new Set<string>();

  constructor(private readonly pets: PetRepository) {
    super();
  }

  async once(
    request: IdempotentCreate,
    create: (pets: PetRepository) => Promise<Pet>,
  ): Promise<{ pet: Pet; replayed: boolean }> {
    const id = JSON.stringify([request.caller, request.key]);
    if (this.inFlight.has(id)) throw new IdempotencyConflictError();
    const previous = this.records.get(id);
    if (previous !== undefined) {
      if (previous.fingerprint !== request.fingerprint) throw new IdempotencyKeyReusedError();
      return { pet: previous.pet, replayed: true };
    }
    this.inFlight.add(id);
    try {
      const pet = await create(this.pets);
      this.records.set(id, { fingerprint: request.fingerprint, pet });
      return { pet, replayed: false };
    } finally {
      this.inFlight.delete(id);
    }
  }
}
