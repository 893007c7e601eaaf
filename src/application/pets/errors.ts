/** A request with the same Idempotency-Key is still being processed. */
export class IdempotencyConflictError extends Error {
  override readonly name = 'IdempotencyConflictError';

  constructor() {
    super('A request with this Idempotency-Key is still in flight');
  }
}

/** The Idempotency-Key was used before with a different request. */
export class IdempotencyKeyReusedError extends Error {
  override readonly name = 'IdempotencyKeyReusedError';

  constructor() {
    super('This Idempotency-Key was used with a different request body');
  }
}

/** The creates a fresh high-water mark waited for did not end within the store's own limits on them. */
export class WritersStillInFlightError extends Error {
  override readonly name = 'WritersStillInFlightError';

  constructor() {
    super('The creates in flight did not end in time');
  }
}

/**
 * The store cannot vouch for its ids now: something the paging guarantee rests on is off (a pets
 * trigger disabled, the id sequence set back behind the ids stored). `problem` says what, and how
 * to mend it; lists (and creates, while the sequence is behind) are refused until it is mended.
 */
export class UnguardedStoreError extends Error {
  override readonly name = 'UnguardedStoreError';

  constructor(readonly problem: string) {
    super(`The store cannot vouch for its ids: ${problem}`);
  }
}
