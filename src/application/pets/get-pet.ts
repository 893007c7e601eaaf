import { type Pet, PetNotFoundError } from '../../domain/pets/pet.js';
import type { PetRepository } from '../../domain/pets/pet-repository.js';

export class GetPet {
  constructor(private readonly pets: PetRepository) {}

  async execute(id: number): Promise<Pet> {
    const pet = await this.pets.findById(id);
    if (pet === null) throw new PetNotFoundError(id);
    return pet;
  }
}
