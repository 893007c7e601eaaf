import type { HighWaterMark, PetRepository } from '../../domain/pets/pet-repository.js';

// The ports the pets' use cases need besides the domain's PetRepository. Each abstract class is
// also its DI token; every method may throw StoreUnavailableError (application/platform).

/**
 * The pets' high-water marks. Creates overlap, so id 8 may be committed while id 7 is still in
 * flight: a page that served 8 before 7 had settled would send a client paging on past 7 for good.
 * Pages serve only pets at or below a mark.
 */
export abstract class HighWaterMarks {
  /** The last mark read, if any. */
  abstract last(): HighWaterMark | null;
  /**
   * A mark read after this call: every create acknowledged before it is at or below the mark. It
   * waits for the creates in flight when it is read, never for later ones; throws
   * StoreUnavailableError when the store does not answer, WritersStillInFlightError when those
   * creates outlast the store's own limits on them, UnguardedStoreError when the store cannot
   * vouch for its ids. Never an older mark instead.
   */
  abstract fresh(): Promise<HighWaterMark>;
}

/** What the high-water marks report as they happen, for the metrics. */
export abstract class HighWaterMarkEvents {
  /** A fresh mark was read (the instance now holds one this new). */
  abstract read(): void;
  /** How long one list waited for its fresh mark: for the creates in flight, mostly. */
  abstract waited(seconds: number): void;
  /** A list got no fresh mark (the store did not answer, the creates outlasted their limits, a guard is off). */
  abstract refused(): void;
}

/** Makes a create safe to retry: the caller (a digest of its API key, never the key) and its Idempotency-Key. */
export type RetryKey = { caller: string; key: string };

/** What a keyed create remembers: what was asked for, and the pet it made. */
export type IdempotencyRecord = { fingerprint: string; petId: number };

/** The creates remembered per retry key, in one transaction of PetTransactions, which hands it out. */
export abstract class IdempotencyKeys {
  /** Holds the key until the transaction ends, or throws IdempotencyConflictError while another one holds it. */
  abstract claim(key: RetryKey): Promise<void>;
  /** The record of an earlier create with this key, while it is remembered (24 hours); else null. */
  abstract find(key: RetryKey): Promise<IdempotencyRecord | null>;
  /** Remembers the create for the retention period, from the transaction's commit on. */
  abstract remember(key: RetryKey, record: IdempotencyRecord): Promise<void>;
}

/** The pets and the retry keys of one transaction. */
export type PetTransaction = { pets: PetRepository; keys: IdempotencyKeys };

/**
 * One transaction around `work`: what it writes is kept if it resolves, and none of it if it
 * throws (its error goes out as it was, or StoreUnavailableError when the store failed).
 */
export abstract class PetTransactions {
  abstract run<T>(work: (transaction: PetTransaction) => Promise<T>): Promise<T>;
}
