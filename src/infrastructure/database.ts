import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { DataSource, DataSourceOptions } from 'typeorm';
import { DatabasePool, type PoolUsage } from '../application/database-pool.js';
import { Readiness } from '../application/readiness.js';
import { StoreUnavailableError } from '../domain/errors.js';
import { startEmbeddedPostgres } from './embedded-postgres.js';
import { CreatePets1763769600000 } from './migrations/1763769600000-create-pets.js';
import { CreateIdempotencyKeys1763769700000 } from './migrations/1763769700000-create-idempotency-keys.js';
import { CreateApiKeys1763769800000 } from './migrations/1763769800000-create-api-keys.js';
import { IdempotencyKeepsThePet1795392000000 } from './migrations/1795392000000-idempotency-keeps-the-pet.js';
import { CreateServiceSecrets1795478400000 } from './migrations/1795478400000-create-service-secrets.js';
import { RECORDS } from './records.js';
import { isUnavailable, translateStoreErrors } from './store-errors.js';

export const MIGRATIONS = [
  CreatePets1763769600000,
  CreateIdempotencyKeys1763769700000,
  CreateApiKeys1763769800000,
  IdempotencyKeepsThePet1795392000000,
  CreateServiceSecrets1795478400000,
];

/**
 * One set of options for the service, the TypeORM CLI and the tests. Schema changes come only
 * from migrations: never `synchronize`. `schema` isolates a test run in its own schema.
 */
export function dataSourceOptions(url: string, schema?: string): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    schema,
    entities: RECORDS,
    migrations: MIGRATIONS,
    migrationsTableName: 'migrations',
    migrationsTransactionMode: 'each',
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
export async function openDatabaseServer(config: { databaseUrl: string | null; dataDir: string }, options: { attachToRunning?: boolean } = {}): Promise<DatabaseServer> {
  if (config.databaseUrl !== null) return new DatabaseServer(config.databaseUrl);
  const embedded = await startEmbeddedPostgres(config.dataDir, options);
  return new DatabaseServer(embedded.url, undefined, () => embedded.stop());
}

/** A start that cannot go on: one line naming the cause and what to do. */
export class StartupError extends Error {
  override name = 'StartupError';
}

export type Clock = { now(): number; sleep(ms: number): Promise<void> };

export const systemClock: Clock = { now: () => Date.now(), sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)) };

/**
 * Waits for a database that is not up yet (it may be starting beside the service), retrying with
 * back-off from 0.5 s to 5 s, for at most `seconds`; then gives up with a StartupError. A server
 * that answers but refuses (wrong password, missing database) is reported at once: waiting would
 * not help.
 */
export async function waitForDatabase(url: string, seconds: number, onRetry: (line: string) => void, clock: Clock = systemClock): Promise<void> {
  const deadline = clock.now() + seconds * 1000;
  for (let delay = 500; ; delay = Math.min(delay * 2, 5000)) {
    const failure = await probe(url);
    if (failure === null) return;
    const where = describe(url);
    if (!isUnavailable(failure) || codeOf(failure) === 'ENOTFOUND') throw new StartupError(refusal(failure, where));
    const left = deadline - clock.now();
    if (left <= 0) {
      throw new StartupError(`Database at ${where} did not answer within ${seconds} s (${reason(failure)}): start PostgreSQL, fix DATABASE_URL, or raise DATABASE_WAIT_SECONDS`);
    }
    onRetry(`Database at ${where} does not answer yet (${reason(failure)}); retrying in ${Math.min(delay, left) / 1000} s`);
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
  if (code === '3D000') return `Database at ${where} does not exist: create it (createdb) or fix the database name in DATABASE_URL`;
  if (code === '28P01' || code === '28000') return `PostgreSQL at ${where} refused the user or password of DATABASE_URL: fix them`;
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
    const driver: unknown = this.dataSource.driver;
    const pool: unknown = typeof driver === 'object' && driver !== null && 'master' in driver ? driver.master : null;
    const count = (name: string): number => {
      const value: unknown = typeof pool === 'object' && pool !== null && name in pool ? Reflect.get(pool, name) : 0;
      return typeof value === 'number' ? value : 0;
    };
    return { total: count('totalCount'), idle: count('idleCount'), waiting: count('waitingCount') };
  }
}
