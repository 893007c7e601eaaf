import type { NewPet, Pet, PetStatus } from './pet.js';

/**
 * Every pet with an id up to `upToId` is settled: stored and visible to any later read, or never
 * to exist. `position` is where the store stood when the mark was read (opaque here): a copy of
 * the store that has not caught up with it may lack settled pets.
 */
export type SettledMark = { upToId: number; position: string };

export type PetListQuery = { status?: PetStatus; afterId?: number; limit: number; settled?: SettledMark };

/** Where pets are kept. Every method may throw StoreUnavailableError. The class is also the DI token. */
export abstract class PetRepository {
  /** Stores the pet; the store assigns the id. */
  abstract add(pet: NewPet): Promise<Pet>;
  abstract findById(id: number): Promise<Pet | null>;
  /**
   * Ascending id, strictly after `afterId`, at most `limit` (keyset: same cost at any depth);
   * with `settled`, only pets up to its id, read where the store has caught up with it.
   */
  abstract list(query: PetListQuery): Promise<Pet[]>;
}

/**
 * Where the pets' ids are settled, in the same store. Creates overlap, so id 8 may be committed
 * while id 7 is still in flight: a page that served 8 before 7 had settled would send a client
 * paging on past 7 for good. Pages serve only pets at or below a mark. The class is also the DI token.
 */
export abstract class SettledMarks {
  /** The last mark read, if any. */
  abstract last(): SettledMark | null;
  /**
   * A mark read after this call: every create acknowledged before it is at or below the mark. It
   * waits for the creates in flight when it is read, never for later ones; throws
   * StoreUnavailableError when the store does not answer, SettleTimeoutError when those creates
   * outlast the store's own limits on them. Never an older mark instead.
   */
  abstract fresh(): Promise<SettledMark>;
}
