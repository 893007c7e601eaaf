import type { NewPet, Pet, PetStatus } from './pet.js';

/**
 * Every pet with an id up to `upToId` is settled: stored and visible to any later read, or never
 * to exist. A store may hand out marks that know more (where it stood when the mark was read).
 */
export type SettledMark = { readonly upToId: number };

export type PetListQuery = { status?: PetStatus; afterId?: number; limit: number; settled?: SettledMark };

/** Where pets are kept. Every method may throw StoreUnavailableError. The class is also the DI token. */
export abstract class PetRepository {
  /** Stores the pet; the store assigns the id. */
  abstract add(pet: NewPet): Promise<Pet>;
  abstract findById(id: number): Promise<Pet | null>;
  /**
   * Ascending id, strictly after `afterId`, at most `limit` (keyset: same cost at any depth);
   * with `settled`, only pets up to its id, read where the store holds every one of them.
   */
  abstract list(query: PetListQuery): Promise<Pet[]>;
}
