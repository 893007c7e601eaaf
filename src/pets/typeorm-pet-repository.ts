import type { EntityManager, Repository } from 'typeorm';
import { isPetStatus, type NewPet, type Pet } from '../domain/pet.js';
import { PetRepository, type PetListQuery } from '../domain/pet-repository.js';
import type { PetRecord } from './pet.record.js';
import { fromBigint } from '../platform/database/bigint.js';
import { translateStoreErrors } from '../platform/database/store-errors.js';
import { propertyOf } from '../platform/property-of.js';

// Fixed statements rather than find() and insert(): TypeORM's query builders rebuilt the same SQL
// and hydrated entities on every call, a share of each request measured in docs/performance.md.
// They still run through the repository (its pool, or the transaction it belongs to).
const COLUMNS = 'id, name, category_id, status';
// Creates overlap, so id 8 may commit before id 7: a page must not serve 8 while 7 may still come,
// or a client that has paged past 8 never sees 7 (keyset paging trusts the order). Each create
// draws its id under the table's advisory lock taken shared, held until COMMIT: creates do not
// wait for each other, and the settled mark (TypeOrmSettledMarks) takes the lock exclusive to see
// every id drawn so far settled. The lock is the table's own (one per schema).
export const PETS_LOCK = `'pets'::regclass::oid::bigint`;
const INSERT = `WITH drawing AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared(${PETS_LOCK}))
  INSERT INTO pets (name, category_id, status) SELECT $1::text, $2::bigint, $3::text FROM drawing RETURNING id`;
const BY_ID = `SELECT ${COLUMNS} FROM pets WHERE id = $1`;
// Keyset paging: "id > last seen" walks the (status, id) index or the primary key, so a deep page
// costs what the first one does (OFFSET would read every skipped row).
export const PAGE = `SELECT ${COLUMNS} FROM pets WHERE id > $1 AND id <= $2 ORDER BY id LIMIT $3`;
export const PAGE_WITH_STATUS = `SELECT ${COLUMNS} FROM pets WHERE status = $1 AND id > $2 AND id <= $3 ORDER BY id LIMIT $4`;
/** The largest bigint: the bound of a list with no settled mark. */
const NO_BOUND = '9223372036854775807';

/** Pets in PostgreSQL through TypeORM's repository for PetRecord (the pool's, or a transaction's). */
export class TypeOrmPetRepository extends PetRepository {
  constructor(private readonly records: Repository<PetRecord>) {
    super();
  }

  /** This repository on a transaction's connection: the idempotency store's creates. */
  inTransaction(manager: EntityManager): TypeOrmPetRepository {
    return new TypeOrmPetRepository(manager.withRepository(this.records));
  }

  add(pet: NewPet): Promise<Pet> {
    return translateStoreErrors(async () => {
      const rows: unknown = await this.records.query(INSERT, [pet.name, pet.categoryId, pet.status]);
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
  list({ status, afterId = 0, limit, settled }: PetListQuery): Promise<Pet[]> {
    const upToId = settled === undefined ? NO_BOUND : settled.upToId;
    return status === undefined
      ? this.select(PAGE, [afterId, upToId, limit])
      : this.select(PAGE_WITH_STATUS, [status, afterId, upToId, limit]);
  }

  private select(sql: string, parameters: unknown[]): Promise<Pet[]> {
    return translateStoreErrors(async () => {
      const rows: unknown = await this.records.query(sql, parameters);
      if (!Array.isArray(rows)) throw new Error('pets query returned no rows array');
      return rows.map(toPet);
    });
  }
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
