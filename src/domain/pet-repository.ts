import type { NewPet, Pet } from './pet.js';
import type { PetStatus } from './pet-status.js';

export type PetListQuery = { status?: PetStatus; afterId?: number; limit: number };

/** Where pets are kept. Every method may throw StoreUnavailableError. The class is also the DI token. */
export abstract class PetRepository {
  /** Stores the pet; the store assigns the id. */
  abstract add(pet: NewPet): Promise<Pet>;
  abstract findById(id: number): Promise<Pet | null>;
  /** Ascending id, strictly after `afterId`, at most `limit` (keyset: same cost at any depth). */
  abstract list(query: PetListQuery): Promise<Pet[]>;
}
