import { describePetRepositoryContract } from '../../contracts/pet-repository.contract.js';
import { InMemoryPetRepository } from '../../support/in-memory-pet-repository.js';

describePetRepositoryContract('InMemoryPetRepository', () => {
  let repository = new InMemoryPetRepository();
  beforeEach(() => {
    repository = new InMemoryPetRepository();
  });
  return { repository: () => repository };
});
