import { GetPet } from '../../../../src/application/pets/get-pet.js';
import { PetNotFoundError } from '../../../../src/domain/pets/pet.js';
import { InMemoryPetRepository } from '../../../support/in-memory-pet-repository.js';
import { aNewPet } from '../../../support/pets.js';

describe('GetPet', () => {
  it('returns the stored pet', async () => {
    const pets = new InMemoryPetRepository();
    const stored = await pets.add(aNewPet({ name: 'Tom', status: 'pending' }));

    expect(await new GetPet(pets).execute(stored.id)).toEqual(stored);
  });

  it('throws PetNotFoundError for an id no pet has', async () => {
    const pets = new InMemoryPetRepository();
    await pets.add(aNewPet());

    await expect(new GetPet(pets).execute(2)).rejects.toEqual(new PetNotFoundError(2));
  });
});
