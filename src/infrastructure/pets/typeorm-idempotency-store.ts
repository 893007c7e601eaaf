import { createHash } from 'node:crypto';
import type { DataSource } from 'typeorm';
import {
  IdempotencyConflictError,
  IdempotencyKeyReusedError,
  IdempotencyStore,
  type IdempotentCreate,
} from '../../application/pets/create-pet.js';
import type { Pet } from '../../domain/pets/pet.js';
import type { PetRepository } from '../../domain/pets/pet-repository.js';
import { translateStoreErrors } from '../platform/database/store-errors.js';
import type { TypeOrmPetRepository } from './typeorm-pet-repository.js';
import { propertyOf } from '../../application/platform/property-of.js';

/** How long a create is remembered for retries (the decisions: 24 hours). */
export const IDEMPOTENCY_RETENTION_SECONDS = 24 * 60 * 60;

/**
 * The record and the pet are written in one transaction, under a transaction-scoped advisory lock
 * on (caller, key), with the pair as primary key: the guarantee holds across instances and crashes.
 */
export class TypeOrmIdempotencyStore extends IdempotencyStore {
  constructor(
    private readonly dataSource: DataSource,
    /** The pets the module wires, run on this store's transaction. */
    private readonly pets: TypeOrmPetRepository,
    private readonly retentionSeconds = IDEMPOTENCY_RETENTION_SECONDS,
  ) {
    super();
  }

  async once(
    request: IdempotentCreate,
    create: (pets: PetRepository) => Promise<Pet>,
  ): Promise<{ pet: Pet; replayed: boolean }> {
    try {
      return await translateStoreErrors(() =>
        this.inTransaction(request, (pets) =>
          create(pets).catch((error: unknown) => Promise.reject(new CreateFailed(error))),
        ),
      );
    } catch (error) {
      // The create's own failure (an outage already translated, ...) goes out unchanged.
      if (error instanceof CreateFailed) throw error.failure;
      throw error;
    }
  }

  private inTransaction(
    request: IdempotentCreate,
    create: (pets: PetRepository) => Promise<Pet>,
  ): Promise<{ pet: Pet; replayed: boolean }> {
    return this.dataSource.transaction(async (manager) => {
      // A second request while the first is in flight gets 409 at once instead of queueing
      // behind it. Released by COMMIT or ROLLBACK.
      const [lock] = await manager.query<unknown[]>(`SELECT pg_try_advisory_xact_lock($1::bigint) AS acquired`, [
        lockIdOf(request),
      ]);
      if (propertyOf(lock, 'acquired') !== true) throw new IdempotencyConflictError();

      const pets = this.pets.inTransaction(manager);
      const [previous]: unknown[] = await manager.query(
        `SELECT fingerprint, pet_id FROM idempotency_keys WHERE caller = $1 AND key = $2 AND expires_at > now()`,
        [request.caller, request.key],
      );
      if (previous !== undefined) {
        if (propertyOf(previous, 'fingerprint') !== request.fingerprint) throw new IdempotencyKeyReusedError();
        const petId = propertyOf(previous, 'pet_id');
        const pet = await pets.findById(Number(petId));
        if (pet === null) throw new Error(`idempotency record points at pet ${String(petId)}, which does not exist`);
        return { pet, replayed: true };
      }

      // Expired records go as new ones arrive (at most 100 at a time, more than the one added),
      // so the table stays bounded with no scheduled job. Before the create: from the pet's
      // insert to COMMIT, a settled mark waits for this transaction (see TypeOrmPetRepository).
      await manager.query(
        `DELETE FROM idempotency_keys WHERE ctid IN (SELECT ctid FROM idempotency_keys WHERE expires_at <= now() LIMIT 100)`,
      );
      const pet = await create(pets);
      await manager.query(
        `INSERT INTO idempotency_keys (caller, key, fingerprint, pet_id, expires_at) VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5))
         ON CONFLICT (caller, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, pet_id = EXCLUDED.pet_id,
           created_at = now(), expires_at = EXCLUDED.expires_at`,
        [request.caller, request.key, request.fingerprint, pet.id, this.retentionSeconds],
      );
      return { pet, replayed: false };
    });
  }
}

/**
 * 64 bits of SHA-256 of (caller, key): two different keys share a lock, and get a false 409, only
 * if these collide (hashtext's two 32-bit halves collided for keys as plain as k176902, k298202).
 */
function lockIdOf({ caller, key }: IdempotentCreate): string {
  return createHash('sha256').update(`${caller}\n${key}`).digest().readBigInt64BE(0).toString();
}

/** Marks a failure of the caller's create, so that it is not mistaken for a failure of this store. */
class CreateFailed extends Error {
  constructor(readonly failure: unknown) {
    super('create failed');
  }
}
