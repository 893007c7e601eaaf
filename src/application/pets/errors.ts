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

/** The creates a fresh settled mark waited for did not end within the store's own limits on them. */
export class SettleTimeoutError extends Error {
  override readonly name = 'SettleTimeoutError';

  constructor() {
    super('The creates in flight did not settle in time');
  }
}
