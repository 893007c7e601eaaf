import type { EntityManager } from 'typeorm';
import type { NewPet, Pet } from '../domain/pet.js';
import { PetRepository, type PetListQuery } from '../domain/pet-repository.js';
import { isPetStatus } from '../domain/pet-status.js';
import { translateStoreErrors } from './store-errors.js';

// Fixed SQL through TypeORM's connection: the profile showed TypeORM's query builder rebuilding
// the same statements and hydrating entities on every call (~15% of a list request). The table
// and its columns are defined by the migrations.
const COLUMNS = 'id, name, category_id, status';
export const INSERT = `INSERT INTO pets (name, category_id, status) VALUES ($1, $2, $3) RETURNING ${COLUMNS}`;
const BY_ID = `SELECT ${COLUMNS} FROM pets WHERE id = $1`;
// Keyset paging: "id > last seen" walks the (status, id) index or the primary key, so a deep page
// costs the same as the first one (OFFSET would read every skipped row).
export const PAGE = `SELECT ${COLUMNS} FROM pets WHERE id > $1 ORDER BY id LIMIT $2`;
export const PAGE_WITH_STATUS = `SELECT ${COLUMNS} FROM pets WHERE status = $1 AND id > $2 ORDER BY id LIMIT $3`;

type PetRow = { id: string; name: string; category_id: string; status: string };

/** Where the statements run: the DataSource (its pool), or the EntityManager of a transaction. */
export type Queryable = Pick<EntityManager, 'query'>;

export class TypeOrmPetRepository extends PetRepository {
  constructor(private readonly database: Queryable) {
    super();
  }

  add(pet: NewPet): Promise<Pet> {
    return this.query(INSERT, [pet.name, pet.categoryId, pet.status]).then(([row]) => {
      if (row === undefined) throw new Error('INSERT INTO pets returned no row');
      return row;
    });
  }

  async findById(id: number): Promise<Pet | null> {
    const [pet] = await this.query(BY_ID, [id]);
    return pet ?? null;
  }

  list({ status, afterId = 0, limit }: PetListQuery): Promise<Pet[]> {
    return status === undefined ? this.query(PAGE, [afterId, limit]) : this.query(PAGE_WITH_STATUS, [status, afterId, limit]);
  }

  private query(sql: string, parameters: unknown[]): Promise<Pet[]> {
    return translateStoreErrors(async () => {
      const rows: unknown = await this.database.query(sql, parameters);
      if (!Array.isArray(rows)) throw new Error('pets query returned no rows array');
      return rows.map(toPet);
    });
  }
}

function isPetRow(row: unknown): row is PetRow {
  return (
    typeof row === 'object' &&
    row !== null &&
    'id' in row &&
    typeof row.id === 'string' &&
    'name' in row &&
    typeof row.name === 'string' &&
    'category_id' in row &&
    typeof row.category_id === 'string' &&
    'status' in row &&
    typeof row.status === 'string'
  );
}

function toPet(row: unknown): Pet {
  if (!isPetRow(row) || !isPetStatus(row.status)) throw new Error('pets row of an unexpected shape');
  return { id: toSafeNumber(row.id), name: row.name, categoryId: toSafeNumber(row.category_id), status: row.status };
}

/** bigint arrives as a string; refuse values a JSON number cannot carry rather than round them. */
function toSafeNumber(bigint: string): number {
  const value = Number(bigint);
  if (!Number.isSafeInteger(value)) throw new Error(`bigint ${bigint} exceeds 2^53-1 and cannot be returned exactly`);
  return value;
}
