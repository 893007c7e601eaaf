import { ListPets } from '../../../../src/application/pets/list-pets.js';
import { WritersStillInFlightError } from '../../../../src/application/pets/errors.js';
import type { Pet } from '../../../../src/domain/pets/pet.js';
import { type HighWaterMark, type PetListQuery, StaleMarkError } from '../../../../src/domain/pets/pet-repository.js';
import { HighWaterMarks } from '../../../../src/application/pets/ports.js';
import { StoreUnavailableError } from '../../../../src/application/platform/store-unavailable-error.js';
import { InMemoryPetRepository } from '../../../support/in-memory-pet-repository.js';
import { InMemoryHighWaterMarks } from '../../../support/in-memory-high-water-marks.js';
import { aNewPet } from '../../../support/pets.js';

async function storeWith(count: number, status: 'available' | 'sold' = 'available'): Promise<InMemoryPetRepository> {
  const pets = new InMemoryPetRepository();
  for (let i = 1; i <= count; i++) await pets.add(aNewPet({ name: `pet ${i}`, status }));
  return pets;
}

function listPetsOf(pets: InMemoryPetRepository): ListPets {
  return new ListPets(pets, new InMemoryHighWaterMarks(pets));
}

/** Marks as a test sets them: `nextUpToId` is what the next fresh read returns. */
class ScriptedMarks extends HighWaterMarks {
  freshReads = 0;
  mark: HighWaterMark | null = null;
  nextUpToId = 0;

  last(): HighWaterMark | null {
    return this.mark;
  }

  failure: Error | null = null;

  fresh(): Promise<HighWaterMark> {
    this.freshReads++;
    if (this.failure !== null) return Promise.reject(this.failure);
    this.mark = { upToId: this.nextUpToId };
    return Promise.resolve(this.mark);
  }
}

describe('ListPets', () => {
  it('returns at most limit pets in ascending id order, and where the next page starts', async () => {
    const pets = await storeWith(5);

    const page = await listPetsOf(pets).execute({ limit: 2 });

    expect(page.pets.map((pet) => pet.id)).toEqual([1, 2]);
    expect(page.nextAfterId).toBe(2);
  });

  it('starts the next page after the last pet of this one, whatever the limit', async () => {
    const pets = await storeWith(10);

    const page = await listPetsOf(pets).execute({ limit: 4, afterId: 1 });

    expect(page.pets.map((pet) => pet.id)).toEqual([2, 3, 4, 5]);
    expect(page.nextAfterId).toBe(5);
  });

  it('continues after the given id', async () => {
    const pets = await storeWith(5);

    const page = await listPetsOf(pets).execute({ limit: 2, afterId: 2 });

    expect(page.pets.map((pet) => pet.id)).toEqual([3, 4]);
  });

  it('gives no next page when the last pets fill the page exactly', async () => {
    const pets = await storeWith(4);

    const page = await listPetsOf(pets).execute({ limit: 2, afterId: 2 });

    expect(page.pets.map((pet) => pet.id)).toEqual([3, 4]);
    expect(page).not.toHaveProperty('nextAfterId');
  });

  it('filters by status across pages', async () => {
    const pets = new InMemoryPetRepository();
    for (const status of ['sold', 'available', 'sold', 'sold'] as const) await pets.add(aNewPet({ status }));

    const first = await listPetsOf(pets).execute({ status: 'sold', limit: 2 });
    const second = await listPetsOf(pets).execute({ status: 'sold', limit: 2, afterId: first.nextAfterId });

    expect(first.pets.map((pet) => pet.id)).toEqual([1, 3]);
    expect(second.pets.map((pet) => pet.id)).toEqual([4]);
    expect(second.nextAfterId).toBeUndefined();
  });

  it('returns an empty page for an empty store', async () => {
    expect(await listPetsOf(new InMemoryPetRepository()).execute({ limit: 20 })).toEqual({ pets: [] });
  });

  describe('serves only settled pets', () => {
    it('serves no pet above the high-water mark, and gives no next page past it', async () => {
      const pets = await storeWith(5);
      const marks = new ScriptedMarks();
      marks.nextUpToId = 3;

      const page = await new ListPets(pets, marks).execute({ limit: 2, afterId: 1 });

      expect(page).toEqual({ pets: [expect.objectContaining({ id: 2 }), expect.objectContaining({ id: 3 })] });
    });

    it('reads no new mark for a full page below the last one', async () => {
      const pets = await storeWith(10);
      const marks = new ScriptedMarks();
      marks.nextUpToId = 10;
      await new ListPets(pets, marks).execute({ limit: 20 });

      const page = await new ListPets(pets, marks).execute({ limit: 2 });

      expect(page.nextAfterId).toBe(2);
      expect(marks.freshReads).toBe(1);
    });

    it('reads a fresh mark for a short page, so that the pets settled since are served', async () => {
      const pets = await storeWith(3);
      const marks = new ScriptedMarks();
      marks.nextUpToId = 3;
      await new ListPets(pets, marks).execute({ limit: 20 });
      await pets.add(aNewPet());
      marks.nextUpToId = 4;

      const page = await new ListPets(pets, marks).execute({ limit: 20 });

      expect(page.pets.map((pet) => pet.id)).toEqual([1, 2, 3, 4]);
      expect(marks.freshReads).toBe(2);
    });

    it('reads a fresh mark for a page that reaches the last one', async () => {
      const pets = await storeWith(4);
      const marks = new ScriptedMarks();
      marks.nextUpToId = 2;
      await new ListPets(pets, marks).execute({ limit: 20 });
      marks.nextUpToId = 4;

      const page = await new ListPets(pets, marks).execute({ limit: 2 });

      expect(page.pets.map((pet) => pet.id)).toEqual([1, 2]);
      expect(page.nextAfterId).toBe(2);
    });
  });

  describe('when no fresh mark can be had', () => {
    it.each([
      ['the store does not answer', new StoreUnavailableError()],
      ['the creates in flight do not settle in time', new WritersStillInFlightError()],
    ])('fails a short page rather than serve it as final under the old mark (%s)', async (_, failure) => {
      const pets = await storeWith(3);
      const marks = new ScriptedMarks();
      marks.nextUpToId = 2;
      await new ListPets(pets, marks).execute({ limit: 20 });
      marks.failure = failure;

      await expect(new ListPets(pets, marks).execute({ limit: 20 })).rejects.toBe(failure);
    });

    it('still serves a full page below the last mark', async () => {
      const pets = await storeWith(5);
      const marks = new ScriptedMarks();
      marks.nextUpToId = 5;
      await new ListPets(pets, marks).execute({ limit: 20 });
      marks.failure = new StoreUnavailableError();

      const page = await new ListPets(pets, marks).execute({ limit: 2 });

      expect(page.pets.map((pet) => pet.id)).toEqual([1, 2]);
      expect(page.nextAfterId).toBe(2);
    });
  });

  describe('after a failover or a restore', () => {
    /** The store after its database changed: it no longer vouches for the marks read before. */
    class ChangedStore extends InMemoryPetRepository {
      staleUpTo: HighWaterMark | null = null;

      override list(query: PetListQuery): Promise<Pet[]> {
        if (query.upTo !== undefined && query.upTo === this.staleUpTo) return Promise.reject(new StaleMarkError());
        return super.list(query);
      }
    }

    it('reads a fresh mark for a full page rather than serve it under a last mark the store calls stale', async () => {
      const pets = new ChangedStore();
      for (let i = 1; i <= 5; i++) await pets.add(aNewPet());
      const marks = new ScriptedMarks();
      marks.nextUpToId = 5;
      await new ListPets(pets, marks).execute({ limit: 20 });
      pets.staleUpTo = marks.last();
      marks.nextUpToId = 3;

      const page = await new ListPets(pets, marks).execute({ limit: 2 });

      expect(marks.freshReads).toBe(2);
      expect(page.pets.map((pet) => pet.id)).toEqual([1, 2]);
      expect(page.nextAfterId).toBe(2);
    });

    it('fails with StaleMarkError when the fresh mark is stale too (the database changed again meanwhile)', async () => {
      const pets = new ChangedStore();
      await pets.add(aNewPet());
      const marks = new ScriptedMarks();
      marks.nextUpToId = 1;
      const fresh = marks.fresh.bind(marks);
      marks.fresh = async () => (pets.staleUpTo = await fresh());

      await expect(new ListPets(pets, marks).execute({ limit: 20 })).rejects.toBeInstanceOf(StaleMarkError);
    });
  });

  describe('the reads it makes', () => {
    /** The store, counting the pages it is asked for. */
    class CountedStore extends InMemoryPetRepository {
      pagesRead = 0;
      failure: Error | null = null;

      override list(query: PetListQuery): Promise<Pet[]> {
        this.pagesRead++;
        if (this.failure !== null) return Promise.reject(this.failure);
        return super.list(query);
      }
    }

    it('reads a short page once more only when the fresh mark is newer: the same mark has no other rows', async () => {
      const pets = new CountedStore();
      for (let i = 1; i <= 3; i++) await pets.add(aNewPet());
      const marks = new ScriptedMarks();
      marks.nextUpToId = 3;
      const listPets = new ListPets(pets, marks);
      await listPets.execute({ limit: 20 });
      pets.pagesRead = 0;

      const same = await listPets.execute({ limit: 20 });
      const sameReads = pets.pagesRead;
      await pets.add(aNewPet());
      marks.nextUpToId = 4;
      const newer = await listPets.execute({ limit: 20 });

      expect(sameReads).toBe(1);
      expect(same.pets.map((pet) => pet.id)).toEqual([1, 2, 3]);
      expect(pets.pagesRead).toBe(1 + 2);
      expect(newer.pets.map((pet) => pet.id)).toEqual([1, 2, 3, 4]);
    });

    it("fails with the store's error when the page under the last mark fails, without reading a fresh mark", async () => {
      const pets = new CountedStore();
      for (let i = 1; i <= 5; i++) await pets.add(aNewPet());
      const marks = new ScriptedMarks();
      marks.nextUpToId = 5;
      const listPets = new ListPets(pets, marks);
      await listPets.execute({ limit: 20 });
      const failure = new StoreUnavailableError();
      pets.failure = failure;

      await expect(listPets.execute({ limit: 2 })).rejects.toBe(failure);
      expect(marks.freshReads).toBe(1);
    });
  });
});
