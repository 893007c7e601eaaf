import { AsyncLocalStorage } from 'node:async_hooks';
import type { EntityManager } from 'typeorm';

/**
 * The transaction an adapter call should join, if any. Lets TypeOrmIdempotencyStore write a pet
 * and its idempotency record in one transaction without the use case knowing about either.
 */
const currentTransaction = new AsyncLocalStorage<EntityManager>();

export function runInTransaction<T>(manager: EntityManager, work: () => Promise<T>): Promise<T> {
  return currentTransaction.run(manager, work);
}

/** The manager of the surrounding transaction, or `outside` when there is none. */
export function managerFor(outside: EntityManager): EntityManager {
  return currentTransaction.getStore() ?? outside;
}
