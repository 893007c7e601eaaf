import type { DataSource } from 'typeorm';
import type { NewPet, Pet } from '../../domain/pets/pet.js';
import { type HighWaterMark, PetRepository, type PetListQuery } from '../../domain/pets/pet-repository.js';
import { propertyOf } from '../platform/property-of.js';
import { StoreUnavailableError } from '../../application/platform/store-unavailable-error.js';
import type { ReplicaSet } from '../platform/database/replica-set.js';
import { translateStoreErrors } from '../platform/database/store-errors.js';
import { WalHighWaterMark } from './high-water-marks.js';
import { PRIMARY_TIMELINE } from '../platform/database/typeorm-replicas.js';
import { prepared, readPage, TypeOrmPetRepository } from './typeorm-pet-repository.js';

// Pet reads on streaming replicas: where a read goes (ReplicaRoutingPetRepository), and the check a
// page makes on the replica's own connection (TypeOrmReplicaPetRepository). docs/internals.md,
// "Exact paging", says why each is needed.

/**
 * Whether the server this connection reaches holds every pet of a mark read at ($1, LSN) on
 * timeline $2. A standby: replayed past it, and following that timeline (its WAL receiver's, when
 * the role may read it: a standby that follows a newer timeline lacks what the old primary wrote
 * after the fork). A primary (a node listed as a replica that a failover promoted): its own insert
 * position past it, on that timeline.
 */
const REACHED = prepared(
  'wal_reached',
  `SELECT CASE WHEN pg_is_in_recovery()
    THEN pg_last_wal_replay_lsn() >= $1::pg_lsn AND coalesce((SELECT received_tli FROM pg_stat_wal_receiver), $2) = $2
    ELSE pg_current_wal_insert_lsn() >= $1::pg_lsn AND ${PRIMARY_TIMELINE} = $2 END AS reached`,
);

/** The replica a page went to does not hold every pet of the page's mark yet: the page is read elsewhere. */
export class ReplicaBehindError extends Error {
  constructor(mark: string) {
    super(`the replica does not hold every pet of ${mark} yet`);
    this.name = 'ReplicaBehindError';
  }
}

/**
 * Pets on a streaming replica. A page under a high-water mark is read only once the server its
 * own connection reaches holds every pet of the mark (REACHED), checked on that connection just
 * before the page's statement, whose snapshot then holds every commit up to there. A check's
 * measure is not enough: behind a balancer, the replica it measured may not be the one a read
 * reaches.
 */
export class TypeOrmReplicaPetRepository extends TypeOrmPetRepository {
  constructor(private readonly replica: DataSource) {
    super(replica.manager);
  }

  override async list(query: PetListQuery): Promise<Pet[]> {
    if (query.upTo === undefined) return readPage(this.replica.manager, query, { onPrimary: false });
    const mark = walMarkOf(query.upTo);
    if (mark === null) throw new ReplicaBehindError('a mark read elsewhere');
    const connection = this.replica.createQueryRunner();
    try {
      const rows: unknown = await translateStoreErrors(() => connection.query(REACHED, [mark.lsn, mark.timeline]));
      if (propertyOf(Array.isArray(rows) ? rows[0] : undefined, 'reached') !== true)
        throw new ReplicaBehindError(`${mark.lsn} on timeline ${mark.timeline}`);
      return await readPage(connection.manager, query, { onPrimary: false });
    } finally {
      await connection.release();
    }
  }
}

/**
 * Reads from a replica when one is usable, everything else from the primary. A replica that
 * fails or is slower than the deadline costs the read that deadline, then the read goes to the
 * primary. Read-your-writes: a pet a replica does not have (it may not have replayed the create
 * yet) is looked for on the primary before the answer is 404. A list under a high-water mark goes
 * only to a replica that holds every pet of the mark.
 */
export class ReplicaRoutingPetRepository<Connection> extends PetRepository {
  constructor(
    private readonly primary: PetRepository,
    private readonly replicas: ReplicaSet<Connection>,
    /** The pets on one replica's connection (TypeOrmReplicaPetRepository on its pool). */
    private readonly petsOn: (replica: Connection) => PetRepository,
  ) {
    super();
  }

  add(pet: NewPet): Promise<Pet> {
    return this.primary.add(pet);
  }

  async findById(id: number): Promise<Pet | null> {
    const found = await this.fromReplica((pets) => pets.findById(id));
    return found ?? this.primary.findById(id);
  }

  /**
   * A page under a mark goes to a replica a check saw replayed past the mark, else to any usable
   * one: while creates go on, every fresh mark is newer than the last check, and a replica has
   * usually replayed past it by the time the page is read; the read checks that itself, and a page
   * the replica cannot serve yet goes to the primary. When the primary is missing (a failover), a
   * replica is tried after all, and its read decides as well.
   */
  async list(query: PetListQuery): Promise<Pet[]> {
    const read = (pets: PetRepository): Promise<Pet[]> => pets.list(query);
    const mark = query.upTo === undefined ? undefined : walMarkOf(query.upTo);
    // A mark that carries no WAL position cannot tell which replica holds its pets.
    if (mark === null) return this.primary.list(query);
    const fromReplica = await this.fromReplica(read, mark?.lsn);
    if (fromReplica !== null) return fromReplica;
    try {
      return await this.primary.list(query);
    } catch (error) {
      if (!(error instanceof StoreUnavailableError) || mark === undefined) throw error;
      const fromAnyReplica = await this.fromReplica(read);
      if (fromAnyReplica === null) throw error;
      return fromAnyReplica;
    }
  }

  /**
   * The replica's answer, or null when there is none to ask, it does not hold the page's mark yet,
   * or it failed (it is then taken out).
   * A read that finds the replica unavailable is tried once more, within the same deadline, once
   * the pool has dropped the connections that were cut: a balancer in front of several replicas
   * cuts its sessions to one it takes out (a replica promoted in a failover) and sends a new
   * connection to another. Taking them all out would send reads to a primary that may be missing.
   */
  private async fromReplica<T>(read: (pets: PetRepository) => Promise<T>, replayedPast?: string): Promise<T | null> {
    const replica = this.replicas.pick(replayedPast) ?? (replayedPast === undefined ? null : this.replicas.pick());
    if (replica === null) return null;
    const readTwice = async (): Promise<T> => {
      try {
        return await read(this.petsOn(replica.reads));
      } catch (error) {
        if (!(error instanceof StoreUnavailableError)) throw error;
        // The other cut connections' close events are handled before this resumes.
        await new Promise((resolve) => setImmediate(resolve));
        return read(this.petsOn(replica.reads));
      }
    };
    try {
      return await this.replicas.withinDeadline(readTwice());
    } catch (error) {
      if (error instanceof ReplicaBehindError) return null;
      const reason =
        error instanceof StoreUnavailableError
          ? 'a read found it unavailable'
          : `a read failed: ${error instanceof Error ? error.message : String(error)}`;
      this.replicas.takeOut(replica.name, reason);
      return null;
    }
  }
}

/** The mark with its WAL position and timeline, when it was read on the primary here. */
function walMarkOf(mark: HighWaterMark): WalHighWaterMark | null {
  return mark instanceof WalHighWaterMark ? mark : null;
}
