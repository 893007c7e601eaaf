import type { QueryConfig } from 'pg';
import type { EntityManager } from 'typeorm';
import { isPetStatus, type NewPet, type Pet, type PetStatus } from '../../domain/pets/pet.js';
import { PetRepository, type PetListQuery } from '../../domain/pets/pet-repository.js';
import { fromBigint } from '../platform/database/bigint.js';
import { translateStoreErrors } from '../platform/database/store-errors.js';
import { propertyOf } from '../platform/property-of.js';

// The pets in PostgreSQL. How creates, settled marks and replica reads keep paging exact is told
// in docs/internals.md ("Exact paging"); typeorm-settled-marks.ts and the replica files build on
// the lock and the page statement declared here.

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
/**
 * The pets lock: an advisory lock whose bigint key is the `pets` table's oid, so each schema has
 * its own. Every insert into `pets` takes it shared before its id is drawn and holds it until its
 * transaction ends; the table's trigger does it, whatever issues the insert (migration
 * PetsIdsDrawnUnderLock). A settled mark waits for its holders (docs/internals.md, "Exact paging").
 */
export const PETS_LOCK = `'pets'::regclass::oid::bigint`;
/** The pets lock's rows in `pg_locks`: a bigint key shows its high half as classid, its low half as objid. */
export const ON_PETS_LOCK = `locktype = 'advisory' AND classid = (${PETS_LOCK} >> 32)::oid
  AND objid = (${PETS_LOCK} & 4294967295)::oid AND objsubid = 1`;
// A plain INSERT: the table's trigger takes the pets lock before the id is drawn, as for any insert.
const INSERT = prepared('pets_insert', `INSERT INTO pets (name, category_id, status) VALUES ($1, $2, $3) RETURNING id`);
const BY_ID = prepared('pets_by_id', `SELECT ${COLUMNS} FROM pets WHERE id = $1`);
// Keyset paging: "id > last seen" walks the (status, id) index or the primary key, so a deep page
// costs what the first one does (OFFSET would read every skipped row). Rows, not a JSON text that
// PostgreSQL builds: the database is the one tier every instance shares, and json_agg cost it more
// than reading the rows costs here (docs/performance.md).
export const PAGE_TEXT = `SELECT ${COLUMNS} FROM pets WHERE id > $1 AND id <= $2 ORDER BY id LIMIT $3`;
const PAGE = prepared('pets_page', PAGE_TEXT);
// One statement per status, the status written in: with it as a parameter, the generic plan walks
// the primary key and filters by status, which for a rare status reads every row from the cursor
// to the mark. Written in, each status gets the plan its own share of the rows calls for. The
// statuses are the domain's constants, never a request's text.
export function pageWithStatusText(status: PetStatus): string {
  return `SELECT ${COLUMNS} FROM pets WHERE status = '${status}' AND id > $1 AND id <= $2 ORDER BY id LIMIT $3`;
}
const PAGE_WITH_STATUS: Record<PetStatus, string> = {
  available: prepared('pets_page_available', pageWithStatusText('available')),
  pending: prepared('pets_page_pending', pageWithStatusText('pending')),
  sold: prepared('pets_page_sold', pageWithStatusText('sold')),
};
/** The largest bigint: the bound of a list with no settled mark. */
const NO_BOUND = '9223372036854775807';

/** Pets in PostgreSQL through a TypeORM entity manager (the pool's, or a transaction's). */
export class TypeOrmPetRepository extends PetRepository {
  constructor(private readonly manager: EntityManager) {
    super();
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
export function readPage(
  manager: EntityManager,
  { status, afterId = 0, limit, settled }: PetListQuery,
): Promise<Pet[]> {
  const upToId = settled === undefined ? NO_BOUND : settled.upToId;
  return translateStoreErrors(async () => {
    const statement = status === undefined ? PAGE : PAGE_WITH_STATUS[status];
    const rows: unknown = await manager.query(statement, [afterId, upToId, limit]);
    if (!Array.isArray(rows)) throw new Error('pets page query returned no rows array');
    return rows.map(toPet);
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
