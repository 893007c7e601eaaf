import type { NewPet, Pet } from '../../src/domain/pets/pet.js';
import { PetRepository, type PetListQuery } from '../../src/domain/pets/pet-repository.js';

/** An honest fake: assigns ids in order, pages by id, filters by status, like PostgreSQL does. */
export class InMemoryPetRepository extends PetRepository {
  private readonly pets = new Map<number, Pet>();
  private lastId = 0;

  add(pet: NewPet): Promise<Pet> {
    const stored = { id: ++this.lastId, name: pet.name, categoryId: pet.categoryId, status: pet.status };
    this.pets.set(stored.id, stored);
    return Promise.resolve({ ...stored });
  }

  findById(id: number): Promise<Pet | null> {
    const pet = this.pets.get(id);
    return Promise.resolve(pet ? { ...pet } : null);
  }

  /** Undoes an add whose transaction failed (InMemoryPetTransactions); the id stays drawn, as a sequence's does. */
  forget(id: number): void {
    this.pets.delete(id);
  }

  /** The highest id drawn: every create settles as it is acknowledged here. */
  get lastIdDrawn(): number {
    return this.lastId;
  }

  list({ status, afterId = 0, limit, upTo }: PetListQuery): Promise<Pet[]> {
    const upToId = upTo?.upToId ?? Number.MAX_SAFE_INTEGER;
    return Promise.resolve(
      [...this.pets.values()]
        .filter((pet) => pet.id > afterId && pet.id <= upToId && (status === undefined || pet.status === status))
        .sort((a, b) => a.id - b.id)
        .slice(0, limit)
        .map((pet) => ({ ...pet })),
    );
  }
}
