import { type DataSource, MoreThan, type Repository } from 'typeorm';
import type { NewPet, Pet } from '../domain/pet.js';
import { PetRepository, type PetListQuery } from '../domain/pet-repository.js';
import { isPetStatus } from '../domain/pet-status.js';
import { PetRecord } from './pet.record.js';
import { translateStoreErrors } from './store-errors.js';
import { managerFor } from './transaction-context.js';

export class TypeOrmPetRepository extends PetRepository {
  constructor(private readonly dataSource: DataSource) {
    super();
  }

  /** Joins the surrounding transaction when there is one (an idempotent create). */
  private get records(): Repository<PetRecord> {
    return managerFor(this.dataSource.manager).getRepository(PetRecord);
  }

  add(pet: NewPet): Promise<Pet> {
    return translateStoreErrors(async () => {
      // INSERT ... RETURNING id: one round trip; every other column is what we sent.
      const result = await this.records.insert(toRecord(pet));
      const id: unknown = result.identifiers[0]?.['id'];
      if (typeof id !== 'string' && typeof id !== 'number') throw new Error('INSERT INTO pets returned no id');
      return { id: toSafeNumber(String(id)), name: pet.name, categoryId: pet.categoryId, status: pet.status };
    });
  }

  findById(id: number): Promise<Pet | null> {
    return translateStoreErrors(async () => {
      const record = await this.records.findOneBy({ id: String(id) });
      return record === null ? null : toPet(record);
    });
  }

  list({ status, afterId, limit }: PetListQuery): Promise<Pet[]> {
    return translateStoreErrors(async () => {
      // Keyset paging: "id > last seen" walks the (status, id) index or the primary key, so a
      // deep page costs the same as the first one (OFFSET would scan every skipped row).
      const records = await this.records.find({
        where: { ...(status ? { status } : {}), ...(afterId ? { id: MoreThan(String(afterId)) } : {}) },
        order: { id: 'ASC' },
        take: limit,
      });
      return records.map(toPet);
    });
  }
}

function toRecord(pet: NewPet): Omit<PetRecord, 'id'> {
  return { name: pet.name, categoryId: String(pet.categoryId), status: pet.status };
}

function toPet(record: PetRecord): Pet {
  if (!isPetStatus(record.status)) throw new Error(`pets row ${record.id} has an unknown status`);
  return { id: toSafeNumber(record.id), name: record.name, categoryId: toSafeNumber(record.categoryId), status: record.status };
}

/** bigint arrives as a string; refuse values a JSON number cannot carry rather than round them. */
function toSafeNumber(bigint: string): number {
  const value = Number(bigint);
  if (!Number.isSafeInteger(value)) throw new Error(`bigint ${bigint} exceeds 2^53-1 and cannot be returned exactly`);
  return value;
}
