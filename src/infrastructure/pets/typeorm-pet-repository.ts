import type { QueryConfig } from 'pg';
import type { EntityManager } from 'typeorm';
import { isPetStatus, type NewPet, type Pet, type PetStatus } from '../../domain/pets/pet.js';
import { UnguardedStoreError } from '../../application/pets/errors.js';
import { PetRepository, type PetListQuery, StaleMarkError } from '../../domain/pets/pet-repository.js';
import { fromBigint } from '../platform/database/bigint.js';
import { PRIMARY_TIMELINE } from '../platform/database/typeorm-replicas.js';
import { retryingWhatTheStoreAsks, translateStoreErrors } from '../platform/database/store-errors.js';
import { propertyOf } from '../platform/property-of.js';
import { WalHighWaterMark } from './high-water-marks.js';

// The pets in PostgreSQL. How creates, high-water marks and replica reads keep paging exact is told
// in docs/internals.md ("Exact paging"); the marks' reading and the replica files build on the
// page statements declared here.

// Fixed statements rather than find() and insert(): TypeORM's query builders rebuilt the same SQL
// and hydrated entities on every call, a share of each request measured in docs/performance.md.
// They run on an entity manager: the pool's, a transaction's or a replica's. The records
// (pet.record.ts) declare the tables for the schema; no statement here goes through them.
const COLUMNS = 'id, name, category_id, status';

/**
 * A named statement, which pg prepares once per connection, so that PostgreSQL parses and plans it
 * once. TypeORM hands it to pg as it is, though its type says string (docs/internals.md).
 */
export function prepared(name: string, text: string): string {
  const statement: QueryConfig = { name, text };
  return statement as unknown as string;
}
// A plain INSERT: the table lock it takes marks it as a writer in flight, as for any insert.
const INSERT = prepared('pets_insert', `INSERT INTO pets (name, category_id, status) VALUES ($1, $2, $3) RETURNING id`);
const BY_ID = prepared('pets_by_id', `SELECT ${COLUMNS} FROM pets WHERE id = $1`);
// Keyset paging: "id > last seen" walks the (status, id) index or the primary key, so a deep page
// costs what the first one does (OFFSET would read every skipped row). Rows, not a JSON text that
// PostgreSQL builds: the database is the one tier every instance shares, and json_agg cost it more
// than reading the rows costs here (docs/performance.md).
export const PAGE_TEXT = `SELECT ${COLUMNS} FROM pets WHERE id > $1 AND id <= $2 ORDER BY id LIMIT $3`;
// One statement per status, the status written in: with it as a parameter, the generic plan walks
// the primary key and filters by status, which for a rare status reads every row from the cursor
// to the mark. Written in, each status gets the plan its own share of the rows calls for. The
// statuses are the domain's constants, never a request's text.
export function pageWithStatusText(status: PetStatus): string {
  return `SELECT ${COLUMNS} FROM pets WHERE status = '${status}' AND id > $1 AND id <= $2 ORDER BY id LIMIT $3`;
}
/**
 * The page statements, by status. On the primary a page under a mark also asks for the primary's
 * timeline (read once, an InitPlan): on another one than the mark's (the mark was read before a
 * failover or a restore) it ends with a row of nulls, so that the page is never served, empty or
 * full. Not a timeline column on every row: that cost each page a share of its time.
 */
const STALE_MARK_ROW = `UNION ALL SELECT NULL, NULL, NULL, NULL WHERE (SELECT ${PRIMARY_TIMELINE}) <> $4`;
function pageStatements(prefix: string, onPrimary: boolean): Record<PetStatus | 'any', string> {
  const page = (text: string): string => (onPrimary ? `(${text}) ${STALE_MARK_ROW}` : text);
  return {
    any: prepared(`${prefix}`, page(PAGE_TEXT)),
    available: prepared(`${prefix}_available`, page(pageWithStatusText('available'))),
    pending: prepared(`${prefix}_pending`, page(pageWithStatusText('pending'))),
    sold: prepared(`${prefix}_sold`, page(pageWithStatusText('sold'))),
  };
}
const PAGES = pageStatements('pets_page', false);
const PAGES_ON_PRIMARY = pageStatements('pets_page_under_timeline', true);
/** The largest bigint: the bound of a list under no high-water mark. */
const NO_BOUND = '9223372036854775807';

/** Pets in PostgreSQL through a TypeORM entity manager (the pool's, or a transaction's). */
export class TypeOrmPetRepository extends PetRepository {
  constructor(private readonly manager: EntityManager) {
    super();
  }

  /** Outside a transaction a refused id is tried again here; inside one, the transaction is (TypeOrmPetTransactions). */
  add(pet: NewPet): Promise<Pet> {
    const insert = async (): Promise<Pet> => {
      const rows: unknown = await this.manager.query(INSERT, [pet.name, pet.categoryId, pet.status]);
      const row: unknown = Array.isArray(rows) ? rows[0] : undefined;
      const id = fromBigint(propertyOf(row, 'id'));
      return { id, name: pet.name, categoryId: pet.categoryId, status: pet.status };
    };
    return this.manager.queryRunner?.isTransactionActive === true ? translateStoreErrors(insert) : creating(insert);
  }

  async findById(id: number): Promise<Pet | null> {
    const [pet] = await this.select(BY_ID, [id]);
    return pet ?? null;
  }

  /** On this store, the primary: a mark of another timeline (read before a failover or a restore) is stale. */
  list(query: PetListQuery): Promise<Pet[]> {
    return readPage(this.manager, query, { onPrimary: true });
  }

  private select(sql: string, parameters: unknown[]): Promise<Pet[]> {
    return translateStoreErrors(async () => {
      const rows: unknown = await this.manager.query(sql, parameters);
      if (!Array.isArray(rows)) throw new Error('pets query returned no rows array');
      return rows.map(toPet);
    });
  }
}

/**
 * One page, on an entity manager: the primary's pool, or one replica connection's
 * (TypeOrmReplicaPetRepository, which checks the server it reaches before it reads).
 */
export function readPage(
  manager: EntityManager,
  { status, afterId = 0, limit, upTo }: PetListQuery,
  { onPrimary }: { onPrimary: boolean },
): Promise<Pet[]> {
  const upToId = upTo === undefined ? NO_BOUND : upTo.upToId;
  const timeline = onPrimary && upTo instanceof WalHighWaterMark ? upTo.timeline : null;
  return translateStoreErrors(async () => {
    const rows: unknown =
      timeline === null
        ? await manager.query(PAGES[status ?? 'any'], [afterId, upToId, limit])
        : await manager.query(PAGES_ON_PRIMARY[status ?? 'any'], [afterId, upToId, limit, timeline]);
    if (!Array.isArray(rows)) throw new Error('pets page query returned no rows array');
    if (timeline !== null && rows.length > 0 && propertyOf(rows[rows.length - 1], 'id') === null)
      throw new StaleMarkError();
    return rows.map(toPet);
  });
}

/**
 * A create (one statement, or a whole transaction) tried again while the database asks for it:
 * the pets trigger refuses an id drawn from a session's sequence cache with 40001, once that cache
 * is discarded (migration PetsIdsAboveTheFloor). A refusal that outlasts the tries means the
 * sequence hands out ids that are not new: an UnguardedStoreError, answered 503.
 */
export function creating<T>(create: () => Promise<T>): Promise<T> {
  return translateStoreErrors(() => retryingWhatTheStoreAsks(create, refusedId));
}

function refusedId(error: unknown): UnguardedStoreError | null {
  const where = propertyOf(error, 'where');
  if (typeof where !== 'string' || !where.includes('pets_refuse_id')) return null;
  return new UnguardedStoreError(String(propertyOf(error, 'message')));
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
