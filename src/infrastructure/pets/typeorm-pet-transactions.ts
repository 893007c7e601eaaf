import type { DataSource, EntityManager } from 'typeorm';
import { type IdempotencyKeys, PetTransactions, type PetTransaction } from '../../application/pets/ports.js';
import type { PetRepository } from '../../domain/pets/pet-repository.js';
import { creating } from './typeorm-pet-repository.js';

/** The adapters a transaction's work runs on, each on the transaction's entity manager (bound in pets.module.ts). */
export type TransactionAdapters = {
  pets: (manager: EntityManager) => PetRepository;
  keys: (manager: EntityManager) => IdempotencyKeys;
};

/**
 * A PostgreSQL transaction whose pets and keys run on its one connection, tried again whole while
 * the database asks for it (a refused id, a deadlock).
 */
export class TypeOrmPetTransactions extends PetTransactions {
  constructor(
    private readonly dataSource: DataSource,
    private readonly adapters: TransactionAdapters,
  ) {
    super();
  }

  // The one translation of the transaction's errors, BEGIN and COMMIT included: what `work` throws
  // of its own (IdempotencyKeyReusedError, ...) is no driver error and goes out unchanged.
  run<T>(work: (transaction: PetTransaction) => Promise<T>): Promise<T> {
    return creating(() =>
      this.dataSource.transaction((manager) =>
        work({ pets: this.adapters.pets(manager), keys: this.adapters.keys(manager) }),
      ),
    );
  }
}
