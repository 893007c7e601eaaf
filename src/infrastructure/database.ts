import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { DatabasePool, type PoolUsage } from '../application/database-pool.js';
import { Readiness } from '../application/readiness.js';
import { StoreUnavailableError } from '../domain/errors.js';
import { startEmbeddedPostgres } from './embedded-postgres.js';
import { CreatePets1763769600000 } from './migrations/1763769600000-create-pets.js';
import { CreateIdempotencyKeys1763769700000 } from './migrations/1763769700000-create-idempotency-keys.js';
import { CreateApiKeys1763769800000 } from './migrations/1763769800000-create-api-keys.js';
import { IdempotencyKeepsThePet1795392000000 } from './migrations/1795392000000-idempotency-keeps-the-pet.js';
import { CreateServiceSecrets1795478400000 } from './migrations/1795478400000-create-service-secrets.js';
import { ApiKeyRecord } from './api-key.record.js';
import { IdempotencyKeyRecord } from './idempotency-key.record.js';
import { PetRecord } from './pet.record.js';
import { ServiceSecretRecord } from './service-secret.record.js';
import { dropSilentConnections } from './silent-connections.js';
import { isUnavailable, translateStoreErrors } from './store-errors.js';

export const MIGRATIONS = [
  CreatePets1763769600000,
  CreateIdempotencyKeys1763769700000,
  CreateApiKeys1763769800000,
  IdempotencyKeepsThePet1795392000000,
  CreateServiceSecrets1795478400000,
];

/** The server cancels a statement after this; a connection silent for longer is dead (see silent-connections.ts). */
const STATEMENT_TIMEOUT_MS = 2000;
export const SILENT_CONNECTION_MS = 3000;

/**
 * One set of options for the service, the TypeORM CLI and the tests. Schema changes come only
 * from migrations: never `synchronize`. `schema` isolates a test run in its own schema.
 */
export function dataSourceOptions(url: string, schema?: string): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    schema,
    entities: [PetRecord, ApiKeyRecord, IdempotencyKeyRecord, ServiceSecretRecord],
    migrations: MIGRATIONS,
    migrationsTableName: 'migrations',
    migrationsTransactionMode: 'each',
    synchronize: false,
    logging: false,
    extra: {
      max: 10,
      // Bounded waits: a database that does not answer costs a request seconds, not minutes.
      // Every statement is an indexed lookup or a single-row write, so these are generous.
      connectionTimeoutMillis: 3000,
      statement_timeout: STATEMENT_TIMEOUT_MS,
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

/** The pg pool behind TypeORM's PostgreSQL driver. */
function poolOf(dataSource: DataSource): pg.Pool | null {
  const master: unknown = Reflect.get(dataSource.driver, 'master');
  // Not `instanceof pg.Pool`: TypeORM loads pg itself, and under Jest's VM modules that is another copy.
  return isPool(master) ? master : null;
}

function isPool(value: unknown): value is pg.Pool {
  return typeof value === 'object' && value !== null && 'totalCount' in value && 'on' in value;
}

/** The PostgreSQL server the service uses: DATABASE_URL's, or the embedded one it started. */
export class DatabaseServer {
  constructor(
    readonly url: string,
    /** Tests only: the schema a test run owns. */
    readonly schema?: string,
    readonly stop: () => Promise<void> = async () => undefined,
  ) {}
}

/** DATABASE_URL → that server; otherwise the embedded PostgreSQL in dataDir, started (or attached to, for tools). */
export async function openDatabaseServer(
  config: { databaseUrl: string | null; dataDir: string },
  options: { attachToRunning?: boolean } = {},
): Promise<DatabaseServer> {
  if (config.databaseUrl !== null) return new DatabaseServer(config.databaseUrl);
  const embedded = await startEmbeddedPostgres(config.dataDir, options);
  return new DatabaseServer(embedded.url, undefined, () => embedded.stop());
}

/** A start that cannot go on: one line naming the cause and what to do. */
export class StartupError extends Error {
  override name = 'StartupError';
}

export type Clock = { now(): number; sleep(ms: number): Promise<void> };

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/**
 * Waits for a database that is not up yet (it may be starting beside the service), retrying with
 * back-off from 0.5 s to 5 s, for at most `seconds`; then gives up with a StartupError. A server
 * that answers but refuses (wrong password, missing database) is reported at once: waiting would
 * not help.
 */
export async function waitForDatabase(
  url: string,
  seconds: number,
  onRetry: (line: string) => void,
  clock: Clock = systemClock,
): Promise<void> {
  const deadline = clock.now() + seconds * 1000;
  for (let delay = 500; ; delay = Math.min(delay * 2, 5000)) {
    const failure = await probe(url);
    if (failure === null) return;
    const where = describe(url);
    if (!isUnavailable(failure) || codeOf(failure) === 'ENOTFOUND') throw new StartupError(refusal(failure, where));
    const left = deadline - clock.now();
    if (left <= 0) {
      throw new StartupError(
        `Database at ${where} did not answer within ${seconds} s (${reason(failure)}): start PostgreSQL, fix DATABASE_URL, or raise DATABASE_WAIT_SECONDS`,
      );
    }
    onRetry(
      `Database at ${where} does not answer yet (${reason(failure)}); retrying in ${Math.min(delay, left) / 1000} s`,
    );
    await clock.sleep(Math.min(delay, left));
  }
}

async function probe(url: string): Promise<unknown> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return null;
  } catch (error) {
    return error;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** host:port/database of a URL, never its user or password. */
function describe(url: string): string {
  const parsed = new URL(url);
  return `${parsed.hostname}:${parsed.port || 5432}${parsed.pathname}`;
}

function reason(error: unknown): string {
  if (typeof error !== 'object' || error === null) return String(error);
  const code = codeOf(error);
  const message = 'message' in error && typeof error.message === 'string' ? error.message : 'no answer';
  return code.startsWith('E') ? code : message;
}

function codeOf(error: unknown): string {
  return typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : '';
}

function refusal(error: unknown, where: string): string {
  const code = codeOf(error);
  if (code === '3D000')
    return `Database at ${where} does not exist: create it (createdb) or fix the database name in DATABASE_URL`;
  if (code === '28P01' || code === '28000')
    return `PostgreSQL at ${where} refused the user or password of DATABASE_URL: fix them`;
  if (code === 'ENOTFOUND') return `The host of DATABASE_URL (${where}) cannot be resolved: fix DATABASE_URL`;
  return `PostgreSQL at ${where} refused the connection: ${reason(error)}`;
}

/**
 * A secret shared by every instance on this database, and kept across restarts: the first
 * instance that asks makes it (256 random bits), the others read the same one.
 */
export async function sharedSecret(dataSource: DataSource, name: string): Promise<string> {
  const rows: unknown = await dataSource.query(
    `WITH made AS (INSERT INTO service_secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING RETURNING value)
     SELECT value FROM made UNION ALL SELECT value FROM service_secrets WHERE name = $1`,
    [name, randomBytes(32).toString('base64url')],
  );
  const row: unknown = Array.isArray(rows) ? rows[0] : undefined;
  const value: unknown = typeof row === 'object' && row !== null ? Reflect.get(row, 'value') : undefined;
  if (typeof value !== 'string') throw new Error(`service secret ${name} could not be read`);
  return value;
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
    const pool = poolOf(this.dataSource);
    return pool === null
      ? { total: 0, idle: 0, waiting: 0 }
      : { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount };
  }
}
