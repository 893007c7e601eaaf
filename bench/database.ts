import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../src/infrastructure/platform/database/embedded-postgres.js';

export type BenchDatabase = { url: string; description: string; close(): Promise<void> };

/**
 * A database the harness owns and throws away: a new database on the server `serverUrl` names
 * (never its existing ones), else an embedded PostgreSQL in a temporary directory.
 */
export async function openBenchDatabase(serverUrl: string | undefined): Promise<BenchDatabase> {
  if (serverUrl) {
    const name = `petstore_bench_${process.pid}`;
    await runSql(serverUrl, `CREATE DATABASE ${name}`);
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    return {
      url: url.toString(),
      description: `DATABASE_URL server, database ${name} (dropped at the end)`,
      close: () => runSql(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
    };
  }
  const dataDir = await mkdtemp(path.join(tmpdir(), 'petstore-bench-'));
  try {
    const embedded = await startEmbeddedPostgres(dataDir);
    return {
      url: embedded.url,
      description: `embedded PostgreSQL in ${dataDir} (removed at the end)`,
      async close() {
        await embedded.stop();
        await rm(dataDir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
}

/** The schema of the baselines' own `pets` table: see baselineUrl(). */
const BASELINE_SCHEMA = 'baseline';

/**
 * The database as the baselines see it: their own `pets` table, the service's columns, index and
 * constraints without its trigger (the app anyone would write has no pets lock to take), so that
 * the service's own schema costs them nothing. pg sets the search path from the URL's `options`.
 */
export function baselineUrl(url: string): string {
  const withPath = new URL(url);
  withPath.searchParams.set('options', `-c search_path=${BASELINE_SCHEMA}`);
  return withPath.toString();
}

/**
 * Replaces every pet with `count` new ones (ids 1..count) in one INSERT: one in a thousand
 * `pending` (the rare status), the others alternately `available` and `sold`; the same pets in the
 * baselines' table (made here from the service's, once it is migrated) when `baselines` is set.
 */
export async function seedPets(url: string, count: number, { baselines = false } = {}): Promise<void> {
  const tables = baselines ? ['pets', `${BASELINE_SCHEMA}.pets`] : ['pets'];
  await runSql(
    url,
    ...(baselines
      ? [
          `CREATE SCHEMA IF NOT EXISTS ${BASELINE_SCHEMA}`,
          `CREATE TABLE IF NOT EXISTS ${BASELINE_SCHEMA}.pets (LIKE public.pets INCLUDING ALL)`,
        ]
      : []),
    `TRUNCATE ${tables.join(', ')}, idempotency_keys RESTART IDENTITY`,
    ...tables.map(
      (table) => `INSERT INTO ${table} (name, category_id, status)
     SELECT 'pet ' || n, 1 + n % 10,
            CASE WHEN n % 1000 = 0 THEN 'pending' WHEN n % 2 = 0 THEN 'available' ELSE 'sold' END
     FROM generate_series(1, ${Math.trunc(count)}) AS n`,
    ),
    // Fresh statistics, so the planner knows how rare `pending` is; the vacuum sets hint bits and
    // the visibility map now, instead of autovacuum doing it during the first measurement.
    ...tables.map((table) => `VACUUM (ANALYZE) ${table}`),
  );
}

/**
 * Pays now the database's own work that a run of creates leaves behind (autovacuum of the new
 * rows, their share of the next checkpoint), so that it does not land on whichever server is
 * measured next. CHECKPOINT needs a superuser or pg_checkpoint: without, the vacuum alone.
 */
export async function settleDatabase(url: string): Promise<void> {
  await runSql(url, `VACUUM (ANALYZE) pets`);
  await runSql(url, `VACUUM (ANALYZE) ${BASELINE_SCHEMA}.pets`).catch(() => undefined);
  await runSql(url, `CHECKPOINT`).catch(() => undefined);
}

async function runSql(url: string, ...statements: string[]): Promise<void> {
  // Bounded: seeding a million rows takes seconds, not minutes.
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000, query_timeout: 180_000 });
  await client.connect();
  try {
    for (const statement of statements) await client.query(statement);
  } finally {
    await client.end();
  }
}
