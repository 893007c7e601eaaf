/** A pet that breaks an invariant. `problems` name the fields, e.g. "name must not be blank". */
export class InvalidPetError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid pet: ${problems.join('; ')}`);
    this.name = 'InvalidPetError';
  }
}

export class PetNotFoundError extends Error {
  constructor(readonly id: number) {
    super(`Pet ${id} does not exist`);
    this.name = 'PetNotFoundError';
  }
}
