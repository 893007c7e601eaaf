import type { PetRepository } from '../../src/domain/pets/pet-repository.js';
import { aNewPet } from '../support/pets.js';

/** One behaviour suite, run against the in-memory fake (unit) and PostgreSQL (integration). */
export function describePetRepositoryContract(name: string, setup: () => { repository: () => PetRepository }): void {
  describe(`${name} (PetRepository contract)`, () => {
    const { repository } = setup();

    it('assigns increasing ids and returns what was stored', async () => {
      const first = await repository().add(aNewPet({ name: 'Rex', categoryId: 3, status: 'pending' }));
      const second = await repository().add(aNewPet({ name: 'Tom' }));

      expect(first).toEqual({ id: expect.any(Number), name: 'Rex', categoryId: 3, status: 'pending' });
      expect(second.id).toBeGreaterThan(first.id);
      expect(await repository().findById(first.id)).toEqual(first);
    });

    it('finds nothing for an id no pet has', async () => {
      await repository().add(aNewPet());

      expect(await repository().findById(999_999)).toBeNull();
    });

    it('lists in ascending id order, at most limit pets', async () => {
      const added = [];
      for (const name of ['a', 'b', 'c', 'd']) added.push(await repository().add(aNewPet({ name })));

      const listed = await repository().list({ limit: 3 });

      expect(listed).toEqual(added.slice(0, 3));
    });

    it('lists only pets after afterId', async () => {
      const added = [];
      for (const name of ['a', 'b', 'c']) added.push(await repository().add(aNewPet({ name })));

      const listed = await repository().list({ afterId: added[0]?.id, limit: 10 });

      expect(listed).toEqual(added.slice(1));
    });

    it('lists only pets up to the high-water mark', async () => {
      const added = [];
      for (const name of ['a', 'b', 'c']) added.push(await repository().add(aNewPet({ name })));
      const upTo = { upToId: added[1]?.id ?? 0 };

      expect(await repository().list({ limit: 10, upTo })).toEqual(added.slice(0, 2));
      expect(await repository().list({ status: 'available', limit: 10, upTo })).toEqual(added.slice(0, 2));
    });

    it('filters by status', async () => {
      const sold = await repository().add(aNewPet({ name: 'a', status: 'sold' }));
      await repository().add(aNewPet({ name: 'b', status: 'available' }));
      const soldToo = await repository().add(aNewPet({ name: 'c', status: 'sold' }));

      expect(await repository().list({ status: 'sold', limit: 10 })).toEqual([sold, soldToo]);
      expect(await repository().list({ status: 'sold', afterId: sold.id, limit: 10 })).toEqual([soldToo]);
      expect(await repository().list({ status: 'pending', limit: 10 })).toEqual([]);
    });

    it('keeps names exactly, including non-ASCII text', async () => {
      const name = 'Zoë 🐕 '.repeat(36).slice(0, 255);

      const added = await repository().add(aNewPet({ name }));

      expect((await repository().findById(added.id))?.name).toBe(name);
    });

    it('keeps the largest category id a JSON number carries exactly', async () => {
      const added = await repository().add(aNewPet({ categoryId: Number.MAX_SAFE_INTEGER }));

      expect((await repository().findById(added.id))?.categoryId).toBe(Number.MAX_SAFE_INTEGER);
    });
  });
}
