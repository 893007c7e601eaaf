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

/** The store did not answer (connection refused, timed out, shutting down). Part of every port's contract. */
export class StoreUnavailableError extends Error {
  constructor(options?: { cause?: unknown }) {
    super('The pet store is temporarily unavailable', options);
    this.name = 'StoreUnavailableError';
  }
}
