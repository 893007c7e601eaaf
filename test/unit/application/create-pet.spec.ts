import { CreatePet } from '../../../src/application/create-pet.js';
import { InvalidPetError } from '../../../src/domain/errors.js';
import { InMemoryPetRepository } from '../../support/in-memory-pet-repository.js';

describe('CreatePet', () => {
  it('gives a new pet the status "available" when none is sent', async () => {
    const pets = new InMemoryPetRepository();

    const created = await new CreatePet(pets).execute({ name: 'Rex', categoryId: 1 });

    expect(created).toEqual({ id: 1, name: 'Rex', categoryId: 1, status: 'available' });
    expect(await pets.findById(created.id)).toEqual(created);
  });

  it('stores nothing when the pet is invalid', async () => {
    const pets = new InMemoryPetRepository();

    await expect(new CreatePet(pets).execute({ name: ' ', categoryId: 1 })).rejects.toBeInstanceOf(InvalidPetError);

    expect(await pets.list({ limit: 10 })).toEqual([]);
  });
});
