import type { NewPet, Pet, PetStatus } from './pet.js';

/**
 * A high-water mark (Kafka's and Marten's word for the point below which everything is settled):
 * every pet with an id up to `upToId` is committed and visible to any later read, or will never
 * exist. A store may hand out marks that know more (where it stood when the mark was read).
 */
export type HighWaterMark = { readonly upToId: number };

export type PetListQuery = { status?: PetStatus; afterId?: number; limit: number; upTo?: HighWaterMark };

/**
 * The store no longer vouches for the mark a page was asked under: it was read on a database that
 * is not the one answering now (a failover or a restore came between). Read a fresh mark.
 */
export class StaleMarkError extends Error {
  override readonly name = 'StaleMarkError';

  constructor() {
    super('The high-water mark was read before the database changed (a failover or a restore)');
  }
}

/** Where pets are kept. Every method may throw StoreUnavailableError. The class is also the DI token. */
export abstract class PetRepository {
  /** Stores the pet; the store assigns the id. */
  abstract add(pet: NewPet): Promise<Pet>;
  abstract findById(id: number): Promise<Pet | null>;
  /**
   * Ascending id, strictly after `afterId`, at most `limit` (keyset: same cost at any depth);
   * with `upTo`, only pets up to its id, read where the store holds every one of them, or
   * StaleMarkError when the store no longer vouches for that mark.
   */
  abstract list(query: PetListQuery): Promise<Pet[]>;
}
