import { type FindManyOptions, MoreThan, type Repository } from 'typeorm';
import type { NewPet, Pet } from '../domain/pet.js';
import { PetRepository, type PetListQuery } from '../domain/pet-repository.js';
import { fromBigint, type PetRecord } from './records.js';
import { translateStoreErrors } from './store-errors.js';

/** Pets in PostgreSQL through TypeORM's repository for PetRecord (the pool's, or a transaction's). */
export class TypeOrmPetRepository extends PetRepository {
  constructor(private readonly records: Repository<PetRecord>) {
    super();
  }

  add(pet: NewPet): Promise<Pet> {
    return translateStoreErrors(async () => {
      const { identifiers } = await this.records.insert({ name: pet.name, categoryId: pet.categoryId, status: pet.status });
      // The id TypeORM read back from RETURNING, before any transformer.
      const id = fromBigint(identifiers[0]?.id);
      return { id, name: pet.name, categoryId: pet.categoryId, status: pet.status };
    });
  }

  findById(id: number): Promise<Pet | null> {
    return translateStoreErrors(async () => {
      const row = await this.records.findOneBy({ id });
      return row === null ? null : toPet(row);
    });
  }

  list(query: PetListQuery): Promise<Pet[]> {
    return translateStoreErrors(async () => (await this.records.find(pageOf(query))).map(toPet));
  }
}

/**
 * Keyset paging: "id > last seen" walks the (status, id) index or the primary key, so a deep
 * page costs what the first one does (OFFSET would read every skipped row).
 */
export function pageOf({ status, afterId = 0, limit }: PetListQuery): FindManyOptions<PetRecord> {
  return { where: { id: MoreThan(afterId), ...(status ? { status } : {}) }, order: { id: 'ASC' }, take: limit };
}

/** Field by field: nothing of the record but the Pet's fields leaves the adapter. */
function toPet(row: PetRecord): Pet {
  return { id: row.id, name: row.name, categoryId: row.categoryId, status: row.status };
}
