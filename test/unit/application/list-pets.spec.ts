import { ListPets } from '../../../src/application/list-pets.js';
import { InMemoryPetRepository } from '../../support/in-memory-pet-repository.js';
import { aNewPet } from '../../support/pets.js';

async function storeWith(count: number, status: 'available' | 'sold' = 'available'): Promise<InMemoryPetRepository> {
  const pets = new InMemoryPetRepository();
  for (let i = 1; i <= count; i++) await pets.add(aNewPet({ name: `pet ${i}`, status }));
  return pets;
}

describe('ListPets', () => {
  it('returns at most limit pets in ascending id order, and where the next page starts', async () => {
    const pets = await storeWith(5);

    const page = await new ListPets(pets).execute({ limit: 2 });

    expect(page.pets.map((pet) => pet.id)).toEqual([1, 2]);
    expect(page.nextAfterId).toBe(2);
  });

  it('starts the next page after the last pet of this one, whatever the limit', async () => {
    const pets = await storeWith(10);

    const page = await new ListPets(pets).execute({ limit: 4, afterId: 1 });

    expect(page.pets.map((pet) => pet.id)).toEqual([2, 3, 4, 5]);
    expect(page.nextAfterId).toBe(5);
  });

  it('continues after the given id', async () => {
    const pets = await storeWith(5);

    const page = await new ListPets(pets).execute({ limit: 2, afterId: 2 });

    expect(page.pets.map((pet) => pet.id)).toEqual([3, 4]);
  });

  it('gives no next page when the last pets fill the page exactly', async () => {
    const pets = await storeWith(4);

    const page = await new ListPets(pets).execute({ limit: 2, afterId: 2 });

    expect(page.pets.map((pet) => pet.id)).toEqual([3, 4]);
    expect(page).not.toHaveProperty('nextAfterId');
  });

  it('filters by status across pages', async () => {
    const pets = new InMemoryPetRepository();
    for (const status of ['sold', 'available', 'sold', 'sold'] as const) await pets.add(aNewPet({ status }));

    const first = await new ListPets(pets).execute({ status: 'sold', limit: 2 });
    const second = await new ListPets(pets).execute({ status: 'sold', limit: 2, afterId: first.nextAfterId });

    expect(first.pets.map((pet) => pet.id)).toEqual([1, 3]);
    expect(second.pets.map((pet) => pet.id)).toEqual([4]);
    expect(second.nextAfterId).toBeUndefined();
  });

  it('returns an empty page for an empty store', async () => {
    expect(await new ListPets(new InMemoryPetRepository()).execute({ limit: 20 })).toEqual({ pets: [] });
  });
});
