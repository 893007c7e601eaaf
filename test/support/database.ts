import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { TypeOrmIdempotencyKeys } from '../../src/infrastructure/pets/typeorm-idempotency-keys.js';
import { TypeOrmPetRepository } from '../../src/infrastructure/pets/typeorm-pet-repository.js';
import { TypeOrmPetTransactions } from '../../src/infrastructure/pets/typeorm-pet-transactions.js';
import { dataSourceOptions } from '../../src/infrastructure/schema/data-source-options.js';
import {
  type EmbeddedDatabase,
  startEmbeddedPostgres,
} from '../../src/infrastructure/platform/database/embedded-postgres.js';

export type TestDatabase = {
  dataSource: DataSource;
  url: string;
  /** The schema this run owns; pass it to dataSourceOptions() for another connection to the same tables. */
  schema: string;
  /** Empties every table between tests. */
  reset(): Promise<void>;
  close(): Promise<void>;
};

/**
 * A fresh schema on the PostgreSQL that DATABASE_URL names (CI has one), else on the embedded
 * server in TEST_DATA_DIR; built by the real migrations, dropped at the end.
 */
export async function openTestDatabase(): Promise<TestDatabase> {
  let embedded: EmbeddedDatabase | null = null;
  const url =
    process.env.DATABASE_URL ||
    (embedded = await startEmbeddedPostgres(process.env.TEST_DATA_DIR ?? './data/test')).url;
  const schema = `test_${randomBytes(6).toString('hex')}`;
  await runSql(url, `CREATE SCHEMA ${schema}`);
  const dataSource = new DataSource(dataSourceOptions(url, schema));
  await dataSource.initialize();
  await dataSource.runMigrations({ transaction: 'each' });
  return {
    dataSource,
    url,
    schema,
    async reset() {
      await dataSource.query('TRUNCATE pets, idempotency_keys, api_keys, service_secrets RESTART IDENTITY');
    },
    async close() {
      if (dataSource.isInitialized) await dataSource.destroy();
      await runSql(url, `DROP SCHEMA ${schema} CASCADE`);
      await embedded?.stop();
    },
  };
}

async function runSql(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** The transactions as pets.module.ts binds them: the pets and keys adapters on each transaction's manager. */
export function petTransactionsOn(dataSource: DataSource): TypeOrmPetTransactions {
  return new TypeOrmPetTransactions(dataSource, {
    pets: (manager) => new TypeOrmPetRepository(manager),
    keys: (manager) => new TypeOrmIdempotencyKeys(manager),
  });
}
