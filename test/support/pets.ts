import type { NewPet, Pet } from '../../src/domain/pets/pet.js';

export function aNewPet(overrides: Partial<NewPet> = {}): NewPet {
  return { name: 'Rex', categoryId: 1, status: 'available', ...overrides };
}

export function aPet(overrides: Partial<Pet> = {}): Pet {
  return { id: 1, ...aNewPet(), ...overrides };
}
