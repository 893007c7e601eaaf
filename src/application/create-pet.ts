import { newPet, type NewPetInput, type Pet } from '../domain/pet.js';
import type { PetRepository } from '../domain/pet-repository.js';

export class CreatePet {
  constructor(private readonly pets: PetRepository) {}

  /** `pets` is the repository to write through: an idempotent create passes its transaction's. */
  async execute(input: NewPetInput, pets: PetRepository = this.pets): Promise<Pet> {
    return pets.add(newPet(input));
  }
}
