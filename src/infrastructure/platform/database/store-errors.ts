import { propertyOf } from '../property-of.js';
import { StoreUnavailableError } from '../../../application/platform/store-unavailable-error.js';

// SQLSTATE classes that mean "the database is not answering", not "the query is wrong":
// 08 connection exception, 53 insufficient resources, 57P01-57P05 shutdown / cannot connect now,
// 57014 statement timeout (an overloaded server), 55P03 lock_timeout (a lock held too long),
// 25006 read-only transaction (the server reached is a standby now: a failover is under way).
const UNAVAILABLE_SQLSTATE = /^(08|53|57P0[1-5]|57014|55P03|25006)/;
// 55000 is any object not in the state a statement needs (a bug, as a rule), except this message:
// a WAL function (the high-water mark's reading reads the primary's WAL position) reached a standby,
// which is what the primary's address leads to for a moment while a failover promotes another.
const STANDBY_REACHED = { code: '55000', message: /^recovery is in progress/ };
// What pg and TypeORM say, without a code, when the server is gone or never answered.
// TypeORM's QueryRunnerAlreadyReleasedError and QueryRunnerProviderAlreadyReleasedError: the
// connection under a transaction died (a failover ended it) and TypeORM let go of it, COMMIT unsent.
const UNAVAILABLE_MESSAGE =
  /Connection terminated|timeout exceeded when trying to connect|not queryable|Connection is not established|Driver not Connected|Query read timeout|ECONNREFUSED|ECONNRESET|Query runner already released|connection provided by a query runner was already released/;

/** True when an error from pg or TypeORM means the store did not answer. */
export function isUnavailable(error: unknown): boolean {
  // Not `instanceof Error`: socket errors may come from another realm (Jest's VM modules, workers).
  if (typeof error !== 'object' || error === null) return false;
  const code = 'code' in error ? String(error.code) : '';
  const message = 'message' in error ? String(error.message) : '';
  if (UNAVAILABLE_SQLSTATE.test(code)) return true;
  if (code === STANDBY_REACHED.code && STANDBY_REACHED.message.test(message)) return true;
  // A SQLSTATE of another class (syntax, constraint, ...) is a bug, not an outage.
  if (/^[0-9A-Z]{5}$/.test(code)) return false;
  if (code.startsWith('E')) return true; // Node socket errors: ECONNREFUSED, ETIMEDOUT, ...
  return UNAVAILABLE_MESSAGE.test(message);
}

/** Runs a store call so that no driver error crosses a port: outages become StoreUnavailableError. */
export async function translateStoreErrors<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (isUnavailable(error)) throw new StoreUnavailableError({ cause: error });
    throw error;
  }
}

// 40001 serialization_failure and 40P01 deadlock_detected: the database asks for the transaction
// again. Not translated by translateStoreErrors, so that a statement inside a transaction lets the
// transaction's owner see them and try the whole transaction again.
const RETRY_SQLSTATE = new Set(['40001', '40P01']);
/** How many times a statement or transaction the database asks to be retried is tried in all. */
export const STORE_ATTEMPTS = 3;

/**
 * Runs `call` again while the database asks for it, STORE_ATTEMPTS times in all; then its last
 * error goes out, as a StoreUnavailableError if it still asks for a retry (503, Retry-After), or
 * to `refused` first, which may name it otherwise. `call` must be one statement outside a
 * transaction, or a whole transaction: a statement inside one cannot be tried again.
 */
export async function retryingWhatTheStoreAsks<T>(
  call: () => Promise<T>,
  refused: (error: unknown) => Error | null = () => null,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (!asksForRetry(error)) throw error;
      if (attempt >= STORE_ATTEMPTS) throw refused(error) ?? new StoreUnavailableError({ cause: error });
    }
  }
}

function asksForRetry(error: unknown): boolean {
  const code = propertyOf(error, 'code');
  return typeof code === 'string' && RETRY_SQLSTATE.has(code);
}
