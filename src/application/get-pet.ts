import { type Pet, PetNotFoundError } from '../domain/pet.js';
import type { PetRepository } from '../domain/pet-repository.js';

export class GetPet {
  constructor(private readonly pets: PetRepository) {}

  async execute(id: number): Promise<Pet> {
    const pet = await this.pets.findById(id);
    if (pet === null) throw new PetNotFoundError(id);
    return pet;
  }
}
