import { createHash } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { IdempotencyConflictError } from '../../application/pets/errors.js';
import { IdempotencyKeys, type IdempotencyRecord, type RetryKey } from '../../application/pets/ports.js';
import { propertyOf } from '../platform/property-of.js';
import { fromBigint } from '../platform/database/bigint.js';

/** How long a create is remembered for retries (the decisions: 24 hours). */
export const IDEMPOTENCY_RETENTION_SECONDS = 24 * 60 * 60;

/**
 * The records in `idempotency_keys`, on one transaction's entity manager (TypeOrmPetTransactions,
 * which also translates their errors). The claim is a transaction-scoped advisory lock on
 * (caller, key), and the pair is the primary key: the guarantee holds across instances and crashes.
 * Expired rows are removed outside requests (IdempotencyKeysCleanup).
 */
export class TypeOrmIdempotencyKeys extends IdempotencyKeys {
  constructor(
    private readonly manager: EntityManager,
    private readonly retentionSeconds = IDEMPOTENCY_RETENTION_SECONDS,
  ) {
    super();
  }

  // A try-lock: a second request while the first is in flight gets 409 at once instead of queueing
  // behind it. Released by COMMIT or ROLLBACK. A statement of its own, before find(): a statement
  // reading the record along with the lock would read it from a snapshot taken before the lock,
  // and miss the record of a holder that committed in between.
  async claim(key: RetryKey): Promise<void> {
    const [lock] = await this.manager.query<unknown[]>(`SELECT pg_try_advisory_xact_lock($1::bigint) AS acquired`, [
      lockIdOf(key),
    ]);
    if (propertyOf(lock, 'acquired') !== true) throw new IdempotencyConflictError();
  }

  async find({ caller, key }: RetryKey): Promise<IdempotencyRecord | null> {
    const [row] = await this.manager.query<unknown[]>(
      `SELECT fingerprint, pet_id FROM idempotency_keys WHERE caller = $1 AND key = $2 AND expires_at > now()`,
      [caller, key],
    );
    if (row === undefined) return null;
    const fingerprint = propertyOf(row, 'fingerprint');
    if (typeof fingerprint !== 'string') throw new Error('idempotency_keys row of an unexpected shape');
    return { fingerprint, petId: fromBigint(propertyOf(row, 'pet_id')) };
  }

  // An expired row not yet removed is taken over: find() no longer sees it.
  async remember({ caller, key }: RetryKey, { fingerprint, petId }: IdempotencyRecord): Promise<void> {
    await this.manager.query(
      `INSERT INTO idempotency_keys (caller, key, fingerprint, pet_id, expires_at) VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5))
       ON CONFLICT (caller, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, pet_id = EXCLUDED.pet_id,
         created_at = now(), expires_at = EXCLUDED.expires_at`,
      [caller, key, fingerprint, petId, this.retentionSeconds],
    );
  }
}

/**
 * 64 bits of SHA-256 of (caller, key): two different keys share a lock, and get a false 409, only
 * if these collide (hashtext's two 32-bit halves collided for keys as plain as k176902, k298202).
 */
function lockIdOf({ caller, key }: RetryKey): string {
  return createHash('sha256').update(`${caller}\n${key}`).digest().readBigInt64BE(0).toString();
}
