import pg from 'pg';
import { DataSource, type DataSourceOptions, MigrationExecutor } from 'typeorm';
import { dropSilentConnections, WatchedClient } from './silent-connections.js';
import { poolOf } from './typeorm-database-pool.js';

/** The server cancels a statement after this; a connection silent for longer is dead (see silent-connections.ts). */
export const STATEMENT_TIMEOUT_MS = 2000;
/** The server ends a session idle inside its transaction for longer than this. */
export const IDLE_IN_TRANSACTION_MS = 5000;
const POOL_SIZE = 10;
export const SILENT_CONNECTION_MS = 3000;

/**
 * What the service's promises rest on, pinned for its own sessions whatever the server, a database
 * or a role sets (a startup option outranks each of them, and a reload of the server's files too):
 * an acknowledged create is durable (on the synchronous standby as well, under Patroni's
 * synchronous mode), and every transaction is READ COMMITTED, as the statements are written for: a
 * serializable default fails creates that overlap with 40001, and every read on a standby.
 */
export const PINNED_SETTINGS = ['synchronous_commit=on', 'default_transaction_isolation=read\\ committed'];

/** The startup `options` of every connection the service opens: the pinned settings, and the schema when one is set. */
export function sessionOptions(schema?: string): string {
  return [...PINNED_SETTINGS, ...(schema ? [`search_path=${schema}`] : [])].map((setting) => `-c ${setting}`).join(' ');
}

/** How long a connection may take to open, and a statement to run. */
export type DatabaseWaits = { connectMs: number; statementMs: number };

const SERVICE_WAITS: DatabaseWaits = { connectMs: 3000, statementMs: STATEMENT_TIMEOUT_MS };

/** The tables a service keeps: the records TypeORM maps, and the migrations that make them. */
export type Tables = Pick<DataSourceOptions, 'entities' | 'migrations'>;

/**
 * PostgreSQL options for the service, the TypeORM CLI and the tests (src/infrastructure/schema/ names the
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
      max: POOL_SIZE,
      // Connections stay open once opened. pg closes one after 10 s idle by default, so each burst
      // after a quiet spell first waited for new connections (and statements prepared again on
      // them): that wait was the tail of the bench's latency (docs/performance.md).
      min: POOL_SIZE,
      // Connections whose socket silent-connections.ts can watch.
      Client: WatchedClient,
      // Bounded waits: a database that does not answer costs a request seconds, not minutes.
      // Every statement is an indexed lookup or a single-row write, so these are generous.
      connectionTimeoutMillis: waits.connectMs,
      statement_timeout: waits.statementMs,
      lock_timeout: STATEMENT_TIMEOUT_MS,
      // A session whose client vanished mid-transaction must not keep its locks (the create lock
      // above all) until TCP notices.
      idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_MS,
      keepAlive: true,
      application_name: 'petstore',
      options: [...PINNED_SETTINGS, ...(schema ? [`search_path=${schema}`] : [])]
        .map((setting) => `-c ${setting}`)
        .join(' '),
    },
  };
}

/**
 * Connects (and runs pending migrations when asked, one process at a time), then watches the pool
 * for connections that go silent. The one way the service and the tools open a DataSource.
 */
export async function openDataSource(
  options: DataSourceOptions,
  onDropped: (count: number) => void = () => undefined,
): Promise<DataSource> {
  const dataSource = await new DataSource({ ...options, migrationsRun: false }).initialize();
  try {
    if (options.migrationsRun === true) await runMigrationsInTurn(dataSource);
  } catch (error) {
    await dataSource.destroy();
    throw error;
  }
  const pool = poolOf(dataSource);
  if (pool !== null) dropSilentConnections(pool, SILENT_CONNECTION_MS, onDropped);
  return dataSource;
}

/**
 * The two-int4 form of the advisory lock ('pets' in ASCII, 2), so it never meets the one-bigint
 * keys that creates and idempotency claims lock, nor the first-run key's ('pets', 1).
 */
const MIGRATIONS_LOCK = [0x70657473, 2];
/** How long an instance waits for another one's migrations before it gives up starting. */
const MIGRATIONS_WAIT_MS = 60_000;
/**
 * How long one migration statement may run: a request's statement limit would end an index build
 * or a back-fill on a large table, and the instance would not start.
 */
const MIGRATION_STATEMENT_MS = 10 * 60_000;

/**
 * The pending migrations, in the migrations' turn (below). `npm run migration:run` (src/migrate.ts)
 * runs them with no limit on a statement (0). Returns the names of the migrations applied.
 */
export function runMigrationsInTurn(dataSource: DataSource, statementMs = MIGRATION_STATEMENT_MS): Promise<string[]> {
  return inMigrationsTurn(dataSource, statementMs, async (migrations) =>
    (await migrations.executePendingMigrations()).map((migration) => migration.name),
  );
}

/**
 * The last migration applied, undone (its `down`) in the migrations' turn, with no limit on a
 * statement: `npm run migration:revert`. Returns its name, or null when none was applied.
 */
export function revertLastMigrationInTurn(dataSource: DataSource): Promise<string | null> {
  return inMigrationsTurn(dataSource, 0, async (migrations) => {
    const last = (await migrations.getExecutedMigrations())[0];
    if (last === undefined) return null;
    await migrations.undoLastMigration();
    return last.name;
  });
}

/**
 * `work` on one connection of its own, under a session advisory lock: TypeORM's migration commands
 * take none, and instances started together on a database that needs a migration would all apply
 * it, all but one failing on "already exists". The others wait, then find nothing pending.
 * Advisory locks are per database, so this serialises the migrations of every schema in it (the
 * tests' included).
 */
async function inMigrationsTurn<T>(
  dataSource: DataSource,
  statementMs: number,
  work: (migrations: MigrationExecutor) => Promise<T>,
): Promise<T> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    // The pool's limits are a request's: waiting for another instance's migrations, and running a
    // migration's statements, get their own.
    await runner.query(`SET lock_timeout = ${MIGRATIONS_WAIT_MS}`);
    await runner.query(`SET statement_timeout = ${MIGRATIONS_WAIT_MS}`);
    await runner.query('SELECT pg_advisory_lock($1, $2)', MIGRATIONS_LOCK);
    try {
      // A table lock keeps the pool's short wait: DDL queued behind the requests of instances still
      // running would queue every request after it. Better the start fail (and be retried).
      await runner.query('RESET lock_timeout');
      await runner.query(`SET statement_timeout = ${statementMs}`);
      const migrations = new MigrationExecutor(dataSource, runner);
      migrations.transaction = dataSource.options.migrationsTransactionMode ?? 'each';
      return await work(migrations);
    } finally {
      // A connection that died released the lock with it; its error is not the one to report.
      await runner.query('SELECT pg_advisory_unlock($1, $2)', MIGRATIONS_LOCK).catch(() => undefined);
    }
  } finally {
    // RESET: back to the pool's own limits, set when the connection opened.
    await runner.query('RESET lock_timeout; RESET statement_timeout').catch(() => undefined);
    await runner.release();
  }
}
