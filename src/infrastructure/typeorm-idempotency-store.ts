import type { DataSource } from 'typeorm';
import {
  IdempotencyConflictError,
  IdempotencyKeyReusedError,
  type IdempotentOutcome,
  type IdempotentRequest,
  IdempotencyStore,
  type StoredResponse,
} from '../application/idempotency-store.js';
import type { PetRepository } from '../domain/pet-repository.js';
import { translateStoreErrors } from './store-errors.js';
import { TypeOrmPetRepository } from './typeorm-pet-repository.js';

/** How long a response is kept for retries (the decisions: 24 hours). */
export const IDEMPOTENCY_RETENTION_SECONDS = 24 * 60 * 60;

type Row = { fingerprint: string; response_status: number; response_body: string; response_location: string | null };

export class TypeOrmIdempotencyStore extends IdempotencyStore {
  constructor(
    private readonly dataSource: DataSource,
    private readonly retentionSeconds = IDEMPOTENCY_RETENTION_SECONDS,
  ) {
    super();
  }

  async once(request: IdempotentRequest, create: (pets: PetRepository) => Promise<StoredResponse>): Promise<IdempotentOutcome> {
    try {
      return await translateStoreErrors(() => this.inTransaction(request, (pets) => create(pets).catch((error: unknown) => Promise.reject(new CreateFailed(error)))));
    } catch (error) {
      // The create's own failure (invalid pet, outage already translated, ...) goes out unchanged.
      if (error instanceof CreateFailed) throw error.failure;
      throw error;
    }
  }

  private inTransaction(request: IdempotentRequest, create: (pets: PetRepository) => Promise<StoredResponse>): Promise<IdempotentOutcome> {
    return this.dataSource.transaction(async (manager) => {
      // A transaction-scoped lock on (caller, key): a second request while the first is in
      // flight gets 409 at once instead of queueing behind it. Released by COMMIT or ROLLBACK.
      const [lock] = await manager.query(`SELECT pg_try_advisory_xact_lock(hashtext($1), hashtext($2)) AS acquired`, [request.caller, request.key]);
      if (!isRecord(lock) || lock.acquired !== true) throw new IdempotencyConflictError();

      const rows: unknown[] = await manager.query(
        `SELECT fingerprint, response_status, response_body, response_location FROM idempotency_keys
          WHERE caller = $1 AND key = $2 AND expires_at > now()`,
        [request.caller, request.key],
      );
      const previous = rows[0];
      if (isRow(previous)) {
        if (previous.fingerprint !== request.fingerprint) throw new IdempotencyKeyReusedError();
        return { replayed: true, response: { status: previous.response_status, body: previous.response_body, location: previous.response_location } };
      }

      // The pets written through this repository commit or roll back with the record. Passed in,
      // not found through an AsyncLocalStorage: on Node 20 one in use turns on promise hooks for
      // every promise of every request from then on.
      const response = await create(new TypeOrmPetRepository(manager));
      // Expired rows go as new ones arrive (at most 100 at a time, more than the one added),
      // so the table stays bounded with no scheduled job. The expired row for this key, if
      // any, is among them or is replaced by the upsert.
      await manager.query(
        `DELETE FROM idempotency_keys WHERE ctid IN (SELECT ctid FROM idempotency_keys WHERE expires_at <= now() LIMIT 100)`,
      );
      await manager.query(
        `INSERT INTO idempotency_keys (caller, key, fingerprint, response_status, response_body, response_location, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7))
         ON CONFLICT (caller, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, response_status = EXCLUDED.response_status,
           response_body = EXCLUDED.response_body, response_location = EXCLUDED.response_location,
           created_at = now(), expires_at = EXCLUDED.expires_at`,
        [request.caller, request.key, request.fingerprint, response.status, response.body, response.location, this.retentionSeconds],
      );
      return { replayed: false, response };
    });
  }
}

/** Marks a failure of the caller's create, so that it is not mistaken for a failure of this store. */
class CreateFailed extends Error {
  constructor(readonly failure: unknown) {
    super('create failed');
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

function isRow(value: unknown): value is Row {
  return isRecord(value) && typeof value.fingerprint === 'string' && typeof value.response_status === 'number' && typeof value.response_body === 'string';
}
