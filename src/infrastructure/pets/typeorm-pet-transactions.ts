import type { DataSource } from 'typeorm';
import { PetTransactions, type PetTransaction } from '../../application/pets/ports.js';
import { translateStoreErrors } from '../platform/database/store-errors.js';
import { TypeOrmIdempotencyKeys } from './typeorm-idempotency-keys.js';
import { TypeOrmPetRepository } from './typeorm-pet-repository.js';

/**
 * A PostgreSQL transaction whose pets and keys run on its one connection. A create inside it draws
 * its id under the pets lock like any insert (the table's trigger, PETS_LOCK), held to COMMIT.
 */
export class TypeOrmPetTransactions extends PetTransactions {
  constructor(private readonly dataSource: DataSource) {
    super();
  }

  // The one translation of the transaction's errors, BEGIN and COMMIT included: what `work` throws
  // of its own (IdempotencyKeyReusedError, ...) is no driver error and goes out unchanged.
  run<T>(work: (transaction: PetTransaction) => Promise<T>): Promise<T> {
    return translateStoreErrors(() =>
      this.dataSource.transaction((manager) =>
        work({ pets: new TypeOrmPetRepository(manager), keys: new TypeOrmIdempotencyKeys(manager) }),
      ),
    );
  }
}
