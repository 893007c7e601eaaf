import pg from 'pg';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { dropSilentConnections, WatchedClient } from './silent-connections.js';
import { poolOf } from './typeorm-database-pool.js';

/** The server cancels a statement after this; a connection silent for longer is dead (see silent-connections.ts). */
const STATEMENT_TIMEOUT_MS = 2000;
export const SILENT_CONNECTION_MS = 3000;

/** How long a connection may take to open, and a statement to run. */
export type DatabaseWaits = { connectMs: number; statementMs: number };

const SERVICE_WAITS: DatabaseWaits = { connectMs: 3000, statementMs: STATEMENT_TIMEOUT_MS };

/** The tables a service keeps: the records TypeORM maps, and the migrations that make them. */
export type Tables = Pick<DataSourceOptions, 'entities' | 'migrations'>;

/**
 * PostgreSQL options for the service, the TypeORM CLI and the tests (src/schema/ names the
 * tables). Schema changes come only from migrations: never `synchronize`. `schema` isolates a
 * test run in its own schema.
 */
export function postgresOptions(
  url: string,
  tables: Tables,
  schema?: string,
  waits = SERVICE_WAITS,
): DataSourceOptions {
  return {
    type: 'postgres',
    // This process's pg, not one TypeORM loads itself: the pool is then a pg.Pool here too.
    driver: pg,
    url,
    schema,
    ...tables,
    migrationsTableName: 'migrations',
    migrationsTransactionMode: 'each',
    synchronize: false,
    logging: false,
    extra: {
      max: 10,
      // Connections whose socket silent-connections.ts can watch.
      Client: WatchedClient,
      // Bounded waits: a database that does not answer costs a request seconds, not minutes.
      // Every statement is an indexed lookup or a single-row write, so these are generous.
      connectionTimeoutMillis: waits.connectMs,
      statement_timeout: waits.statementMs,
      lock_timeout: STATEMENT_TIMEOUT_MS,
      // A session whose client vanished mid-transaction must not keep its locks (the create lock
      // above all) until TCP notices.
      idle_in_transaction_session_timeout: 5000,
      keepAlive: true,
      application_name: 'petstore',
      ...(schema ? { options: `-c search_path=${schema}` } : {}),
    },
  };
}

/**
 * Connects (and runs pending migrations when asked), then watches the pool for connections that
 * go silent. The one way the service and the tools open a DataSource.
 */
export async function openDataSource(
  options: DataSourceOptions,
  onDropped: (count: number) => void = () => undefined,
): Promise<DataSource> {
  const dataSource = await new DataSource(options).initialize();
  const pool = poolOf(dataSource);
  if (pool !== null) dropSilentConnections(pool, SILENT_CONNECTION_MS, onDropped);
  return dataSource;
}
