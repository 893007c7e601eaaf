import type { DataSource } from 'typeorm';
import type { Pet } from '../../domain/pets/pet.js';
import type { PetListQuery } from '../../domain/pets/pet-repository.js';
import { propertyOf } from '../../application/platform/property-of.js';
import { translateStoreErrors } from '../platform/database/store-errors.js';
import { prepared, readPage, TypeOrmPetRepository } from './typeorm-pet-repository.js';

/**
 * How far the server this connection reaches has the WAL: replayed on a standby, written on a
 * primary (a node listed as a replica that a failover promoted).
 */
const REACHED = prepared(
  'wal_reached',
  `SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END >= $1::pg_lsn AS reached`,
);

/** The replica a page went to has not replayed past the page's mark yet: the page is read elsewhere. */
export class ReplicaBehindError extends Error {
  constructor(position: string) {
    super(`the replica has not replayed past ${position} yet`);
    this.name = 'ReplicaBehindError';
  }
}

/**
 * Pets on a streaming replica. A page under a settled mark is read only once the server its own
 * connection reaches has replayed past the mark's WAL position, checked on that connection just
 * before the page's statement, whose snapshot then holds every commit up to there. A check's
 * measure is not enough: behind a balancer, the replica it measured may not be the one a read
 * reaches.
 */
export class TypeOrmReplicaPetRepository extends TypeOrmPetRepository {
  constructor(private readonly replica: DataSource) {
    super(replica.manager);
  }

  override async list(query: PetListQuery): Promise<Pet[]> {
    if (query.settled === undefined) return super.list(query);
    const { position } = query.settled;
    const connection = this.replica.createQueryRunner();
    try {
      const rows: unknown = await translateStoreErrors(() => connection.query(REACHED, [position]));
      if (propertyOf(Array.isArray(rows) ? rows[0] : undefined, 'reached') !== true)
        throw new ReplicaBehindError(position);
      return await readPage(connection.manager, query);
    } finally {
      await connection.release();
    }
  }
}
