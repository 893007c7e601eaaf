import { DataSource, type DataSourceOptions } from 'typeorm';
import { DatabasePool, type PoolUsage } from '../application/database-pool.js';
import { Readiness } from '../application/readiness.js';
import { StoreUnavailableError } from '../domain/errors.js';
import { type EmbeddedDatabase, startEmbeddedPostgres } from './embedded-postgres.js';
import { CreatePets1763769600000 } from './migrations/1763769600000-create-pets.js';
import { CreateIdempotencyKeys1763769700000 } from './migrations/1763769700000-create-idempotency-keys.js';
import { CreateApiKeys1763769800000 } from './migrations/1763769800000-create-api-keys.js';
import { translateStoreErrors } from './store-errors.js';

export const MIGRATIONS = [CreatePets1763769600000, CreateIdempotencyKeys1763769700000, CreateApiKeys1763769800000];

/**
 * One set of options for the service, the TypeORM CLI and the tests. Schema changes come only
 * from migrations: never `synchronize`. `schema` isolates a test run in its own schema.
 */
export function dataSourceOptions(url: string, schema?: string): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    schema,
    // The repositories send their own SQL; the schema is the migrations'. No entities to map.
    entities: [],
    migrations: MIGRATIONS,
    migrationsTableName: 'migrations',
    synchronize: false,
    logging: false,
    extra: {
      max: 10,
      // Bounded waits: a dead database answers 503 in seconds instead of hanging requests.
      connectionTimeoutMillis: 3000,
      statement_timeout: 10_000,
      query_timeout: 12_000,
      application_name: 'petstore',
      ...(schema ? { options: `-c search_path=${schema}` } : {}),
    },
  };
}

export type Database = { dataSource: DataSource; close(): Promise<void> };

/** DATABASE_URL → that server; otherwise the embedded PostgreSQL in dataDir. Runs pending migrations. */
export async function openDatabase(
  config: { databaseUrl: string | null; dataDir: string },
  options: { attachToRunning?: boolean } = {},
): Promise<Database> {
  const server = await resolveDatabase(config, options);
  const dataSource = new DataSource(dataSourceOptions(server.url));
  try {
    await dataSource.initialize();
    await dataSource.runMigrations({ transaction: 'each' });
  } catch (error) {
    await server.stop();
    throw error;
  }
  return {
    dataSource,
    async close() {
      if (dataSource.isInitialized) await dataSource.destroy();
      await server.stop();
    },
  };
}

/** The server to use: DATABASE_URL, else the embedded PostgreSQL in dataDir (started, or attached to). */
export async function resolveDatabase(
  config: { databaseUrl: string | null; dataDir: string },
  options: { attachToRunning?: boolean } = {},
): Promise<EmbeddedDatabase> {
  if (config.databaseUrl !== null) return { url: config.databaseUrl, stop: async () => undefined };
  return startEmbeddedPostgres(config.dataDir, options);
}

export class DatabaseReadiness extends Readiness {
  constructor(private readonly dataSource: DataSource) {
    super();
  }

  async check(): Promise<void> {
    if (!this.dataSource.isInitialized) throw new StoreUnavailableError();
    await translateStoreErrors(() => this.dataSource.query('SELECT 1'));
  }
}

/** Reads the pg pool behind TypeORM's PostgreSQL driver. */
export class TypeOrmDatabasePool extends DatabasePool {
  constructor(private readonly dataSource: DataSource) {
    super();
  }

  usage(): PoolUsage {
    const driver: unknown = this.dataSource.driver;
    const pool: unknown = typeof driver === 'object' && driver !== null && 'master' in driver ? driver.master : null;
    const count = (name: string): number => {
      const value: unknown = typeof pool === 'object' && pool !== null && name in pool ? Reflect.get(pool, name) : 0;
      return typeof value === 'number' ? value : 0;
    };
    return { total: count('totalCount'), idle: count('idleCount'), waiting: count('waitingCount') };
  }
}
