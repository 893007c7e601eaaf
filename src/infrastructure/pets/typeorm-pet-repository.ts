import type { QueryConfig } from 'pg';
import type { DataSource, EntityManager } from 'typeorm';
import { isPetStatus, type NewPet, type Pet, type PetStatus } from '../../domain/pets/pet.js';
import { PetRepository, type PetListQuery, type SettledMark, SettledMarks } from '../../domain/pets/pet-repository.js';
import { fromBigint } from '../platform/database/bigint.js';
import type { ReplicaSet } from '../platform/database/replica-set.js';
import { StoreUnavailableError } from '../../application/platform/store-unavailable-error.js';
import { translateStoreErrors } from '../platform/database/store-errors.js';
import { propertyOf } from '../../application/platform/property-of.js';

/*
 * The pets in PostgreSQL, and the paging guarantee that holds across them:
 * - TypeOrmPetRepository runs the statements, on the pool, a transaction or a replica; each create
 *   draws its id under the pets lock taken shared;
 * - TypeOrmSettledMarks takes that lock exclusive to read how far the ids are settled, and the WAL
 *   position the mark was read at;
 * - ReplicaRoutingPetRepository sends reads to a replica, a page under a mark only to one that has
 *   replayed past the mark's position, which TypeOrmReplicaPetRepository checks on the very
 *   connection the page is read on.
 */

// Fixed statements rather than find() and insert(): TypeORM's query builders rebuilt the same SQL
// and hydrated entities on every call, a share of each request measured in docs/performance.md.
// They run on an entity manager: the pool's, a transaction's or a replica's. The records
// (pet.record.ts) declare the tables for the schema; no statement here goes through them.
const COLUMNS = 'id, name, category_id, status';

/**
 * A statement pg prepares once per connection (a named statement): PostgreSQL parses it once and,
 * after five runs, keeps a generic plan when that costs no more than planning each time. An
 * unnamed statement is parsed and planned on every request (docs/performance.md). Only statements
 * whose generic plan is as good as any (see PAGE_WITH_STATUS). TypeORM hands its query to pg as it
 * is, though its type says string (docs/internals.md); the adapter's integration test shows each
 * statement prepared once and reused.
 */
function prepared(name: string, text: string): string {
  const statement: QueryConfig = { name, text };
  return statement as unknown as string;
}
// Creates overlap, so id 8 may commit before id 7: a page must not serve 8 while 7 may still come,
// or a client that has paged past 8 never sees 7 (keyset paging trusts the order). Each create
// draws its id under the table's advisory lock taken shared, held until COMMIT: creates do not
// wait for each other, and the settled mark (TypeOrmSettledMarks, below) takes the lock exclusive to see
// every id drawn so far settled. The lock is the table's own (one per schema).
const PETS_LOCK = `'pets'::regclass::oid::bigint`;
const INSERT = prepared(
  'pets_insert',
  `WITH drawing AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared(${PETS_LOCK}))
  INSERT INTO pets (name, category_id, status) SELECT $1::text, $2::bigint, $3::text FROM drawing RETURNING id`,
);
const BY_ID = prepared('pets_by_id', `SELECT ${COLUMNS} FROM pets WHERE id = $1`);
// Keyset paging: "id > last seen" walks the (status, id) index or the primary key, so a deep page
// costs what the first one does (OFFSET would read every skipped row).
export const PAGE_TEXT = asJsonPage(`SELECT ${COLUMNS} FROM pets WHERE id > $1 AND id <= $2 ORDER BY id LIMIT $3`);
const PAGE = prepared('pets_page', PAGE_TEXT);
// One statement per status, the status written in: with it as a parameter, the generic plan walks
// the primary key and filters by status, which for a rare status reads every row from the cursor
// to the mark. Written in, each status gets the plan its own share of the rows calls for. The
// statuses are the domain's constants, never a request's text.
export function pageWithStatusText(status: PetStatus): string {
  return asJsonPage(
    `SELECT ${COLUMNS} FROM pets WHERE status = '${status}' AND id > $1 AND id <= $2 ORDER BY id LIMIT $3`,
  );
}
const PAGE_WITH_STATUS: Record<PetStatus, string> = {
  available: prepared('pets_page_available', pageWithStatusText('available')),
  pending: prepared('pets_page_pending', pageWithStatusText('pending')),
  sold: prepared('pets_page_sold', pageWithStatusText('sold')),
};
/**
 * A page comes back as one JSON text, not a row per pet: pg would make an object and four
 * strings of each row, which a busy instance's garbage collector then moves and marks
 * (docs/performance.md). JSON numbers for the bigints: a value past 2^53-1 still parses to an
 * unsafe integer, which toPet refuses.
 */
function asJsonPage(pageText: string): string {
  return `SELECT coalesce(json_agg(page ORDER BY page.id), '[]')::text AS pets FROM (${pageText}) page`;
}
/** The largest bigint: the bound of a list with no settled mark. */
const NO_BOUND = '9223372036854775807';

/** Pets in PostgreSQL through a TypeORM entity manager (the pool's, or a transaction's). */
export class TypeOrmPetRepository extends PetRepository {
  constructor(private readonly manager: EntityManager) {
    super();
  }

  /** This repository on a transaction's connection: the idempotency store's creates. */
  inTransaction(manager: EntityManager): TypeOrmPetRepository {
    return new TypeOrmPetRepository(manager);
  }

  add(pet: NewPet): Promise<Pet> {
    return translateStoreErrors(async () => {
      const rows: unknown = await this.manager.query(INSERT, [pet.name, pet.categoryId, pet.status]);
      const row: unknown = Array.isArray(rows) ? rows[0] : undefined;
      const id = fromBigint(propertyOf(row, 'id'));
      return { id, name: pet.name, categoryId: pet.categoryId, status: pet.status };
    });
  }

  async findById(id: number): Promise<Pet | null> {
    const [pet] = await this.select(BY_ID, [id]);
    return pet ?? null;
  }

  /** On this store whatever `settled.position` is: the one it was read on, or a replica the caller chose. */
  list(query: PetListQuery): Promise<Pet[]> {
    return readPage(this.manager, query);
  }

  private select(sql: string, parameters: unknown[]): Promise<Pet[]> {
    return translateStoreErrors(async () => {
      const rows: unknown = await this.manager.query(sql, parameters);
      if (!Array.isArray(rows)) throw new Error('pets query returned no rows array');
      return rows.map(toPet);
    });
  }
}

/** One page, on an entity manager: the pool's, or one connection's (TypeOrmReplicaPetRepository). */
function readPage(manager: EntityManager, { status, afterId = 0, limit, settled }: PetListQuery): Promise<Pet[]> {
  const upToId = settled === undefined ? NO_BOUND : settled.upToId;
  return translateStoreErrors(async () => {
    const statement = status === undefined ? PAGE : PAGE_WITH_STATUS[status];
    const rows: unknown = await manager.query(statement, [afterId, upToId, limit]);
    const page = propertyOf(Array.isArray(rows) ? rows[0] : undefined, 'pets');
    if (typeof page !== 'string') throw new Error('pets page query returned no JSON text');
    const pets: unknown = JSON.parse(page);
    if (!Array.isArray(pets)) throw new Error('pets page of an unexpected shape');
    return pets.map(toPet);
  });
}

/** Field by field from the row: nothing but the Pet's fields leaves the adapter. */
function toPet(row: unknown): Pet {
  const name = propertyOf(row, 'name');
  const status = propertyOf(row, 'status');
  if (typeof name !== 'string' || !isPetStatus(status)) throw new Error('pets row of an unexpected shape');
  return {
    id: fromBigint(propertyOf(row, 'id')),
    name,
    categoryId: fromBigint(propertyOf(row, 'category_id')),
    status,
  };
}

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

/** How long a mark waits for the creates in flight; creates that arrive meanwhile queue behind it. */
export const SETTLE_LOCK_TIMEOUT_MS = 200;
/** After a mark gave up waiting (a writer holds its transaction open), pages keep the last mark this long. */
export const SETTLE_PAUSE_MS = 1000;

/**
 * One statement, one implicit transaction: the pets lock taken exclusive waits only for the
 * creates in flight (each holds it shared from before its id is drawn until COMMIT), so every id
 * drawn so far is committed or rolled back. PostgreSQL shows a commit to new snapshots before it
 * releases the transaction's locks (docs/performance.md), so every id up to the sequence's last
 * value is settled once the lock is granted. The WAL position, read then, is past every such commit.
 */
const MARK = `WITH waiting AS MATERIALIZED (SELECT set_config('lock_timeout', $1, true)),
  barrier AS MATERIALIZED (SELECT pg_advisory_xact_lock(${PETS_LOCK}) FROM waiting)
  SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence('pets', 'id')::regclass), 0) AS up_to_id,
    pg_current_wal_lsn()::text AS position FROM barrier`;

/**
 * Settled marks read on the primary, shared by the requests of this instance: one statement in
 * flight at a time, and a caller that arrives while one runs shares the next (the one in flight
 * may have read its mark before the caller's own create was acknowledged).
 */
export class TypeOrmSettledMarks extends SettledMarks {
  private mark: SettledMark | null = null;
  private reading: Promise<SettledMark> | null = null;
  private next: Promise<SettledMark> | null = null;
  private pausedUntil = 0;

  constructor(
    private readonly primary: DataSource,
    private readonly options = { lockTimeoutMs: SETTLE_LOCK_TIMEOUT_MS, pauseMs: SETTLE_PAUSE_MS },
    private readonly now: () => number = Date.now,
  ) {
    super();
  }

  last(): SettledMark | null {
    return this.mark;
  }

  fresh(): Promise<SettledMark> {
    if (this.mark !== null && this.now() < this.pausedUntil) return Promise.resolve(this.mark);
    if (this.reading === null) return (this.reading = this.read());
    this.next ??= this.reading
      .then(
        () => undefined,
        () => undefined,
      )
      .then(() => {
        this.next = null;
        return (this.reading ??= this.read());
      });
    return this.next;
  }

  private async read(): Promise<SettledMark> {
    try {
      // One statement at a time, so each mark read is later than the one before.
      this.mark = await translateStoreErrors(() => this.readMark());
      return this.mark;
    } catch (error) {
      // A writer slow to commit (or a primary that does not answer): serving up to the last mark
      // is still exact, and new creates are not held behind another barrier for a while.
      this.pausedUntil = this.now() + this.options.pauseMs;
      if (this.mark !== null) return this.mark;
      throw error;
    } finally {
      this.reading = null;
    }
  }

  private async readMark(): Promise<SettledMark> {
    const rows: unknown = await this.primary.query(MARK, [`${this.options.lockTimeoutMs}ms`]);
    const row: unknown = Array.isArray(rows) ? rows[0] : undefined;
    const position = propertyOf(row, 'position');
    if (typeof position !== 'string') throw new Error('the settled mark gave no WAL position');
    return { upToId: fromBigint(propertyOf(row, 'up_to_id')), position };
  }
}

/**
 * Reads from a replica when one is usable, everything else from the primary. A replica that
 * fails or is slower than the deadline costs the read that deadline, then the read goes to the
 * primary. Read-your-writes: a pet a replica does not have (it may not have replayed the create
 * yet) is looked for on the primary before the answer is 404. A list under a settled mark goes
 * only to a replica that has replayed past the mark's position, so that it lacks no settled pet.
 */
export class ReplicaRoutingPetRepository extends PetRepository {
  constructor(
    private readonly primary: PetRepository,
    private readonly replicas: ReplicaSet<PetRepository>,
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
   * A page whose mark no replica was seen past goes to the primary. When the primary is missing (a
   * failover), a replica is tried after all: the mark was read before the primary went, so the
   * replica has usually replayed past it since, and its read checks that itself.
   */
  async list(query: PetListQuery): Promise<Pet[]> {
    const read = (pets: PetRepository): Promise<Pet[]> => pets.list(query);
    const position = query.settled?.position;
    const fromReplica = await this.fromReplica(read, position);
    if (fromReplica !== null) return fromReplica;
    try {
      return await this.primary.list(query);
    } catch (error) {
      if (!(error instanceof StoreUnavailableError) || position === undefined) throw error;
      const fromAnyReplica = await this.fromReplica(read);
      if (fromAnyReplica === null) throw error;
      return fromAnyReplica;
    }
  }

  /**
   * The replica's answer, or null when there is none to ask, it has not replayed past the page's
   * mark yet, or it failed (it is then taken out).
   * A read that finds the replica unavailable is tried once more, within the same deadline, once
   * the pool has dropped the connections that were cut: a balancer in front of several replicas
   * cuts its sessions to one it takes out (a replica promoted in a failover) and sends a new
   * connection to another. Taking them all out would send reads to a primary that may be missing.
   */
  private async fromReplica<T>(read: (pets: PetRepository) => Promise<T>, replayedPast?: string): Promise<T | null> {
    const replica = this.replicas.pick(replayedPast);
    if (replica === null) return null;
    const readTwice = async (): Promise<T> => {
      try {
        return await read(replica.reads);
      } catch (error) {
        if (!(error instanceof StoreUnavailableError)) throw error;
        // The other cut connections' close events are handled before this resumes.
        await new Promise((resolve) => setImmediate(resolve));
        return read(replica.reads);
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
