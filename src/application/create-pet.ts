import { newPet, type NewPetInput, type Pet } from '../domain/pet.js';
import type { PetRepository } from '../domain/pet-repository.js';

export class CreatePet {
  constructor(private readonly pets: PetRepository) {}

  async execute(input: NewPetInput): Promise<Pet> {
    return this.pets.add(newPet(input));
  }
}
