import { execFile } from 'node:child_process';
import pg from 'pg';
import { MIGRATIONS } from '../../src/schema/migrations.js';
import { inheritedEnv } from '../support/process.js';

const DATABASE_URL = process.env.DATABASE_URL ?? '';
const withServer = DATABASE_URL === '' ? it.skip : it;

/** `npm run migration:run` as it runs after its build: node dist/src/migrate.js. */
function migrate(databaseUrl: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['dist/src/migrate.js'],
      { env: { ...inheritedEnv(), DATABASE_URL: databaseUrl }, encoding: 'utf8' },
      (error, stdout, stderr) =>
        resolve({ code: typeof error?.code === 'number' ? error.code : error ? 1 : 0, stdout, stderr }),
    );
  });
}

async function connected(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return client;
}

/**
 * Polls the database (no clock) until `query` returns a row whose `yes` is true; fails at once if
 * `running` ends first (a command that took no lock would not wait).
 */
async function until(client: pg.Client, query: string, running: Promise<unknown>): Promise<void> {
  let ended = false;
  void running.finally(() => (ended = true));
  while (!((await client.query<{ yes: boolean }>(query)).rows[0]?.yes ?? false)) {
    if (ended) throw new Error(`the command ended without waiting: ${JSON.stringify(await running)}`);
  }
}

describe('npm run migration:run', () => {
  withServer(
    'applies the pending migrations under the lock the instances take at start, then finds none pending',
    async () => {
      const database = `petstore_migrate_${process.pid}`;
      const admin = await connected(DATABASE_URL);
      await admin.query(`CREATE DATABASE ${database}`);
      const url = new URL(DATABASE_URL);
      url.pathname = `/${database}`;
      // An instance applying migrations holds this lock (src/platform/database/database.ts).
      const instance = await connected(url.toString());
      try {
        await instance.query('SELECT pg_advisory_lock($1, $2)', [0x70657473, 2]);

        const running = migrate(url.toString());
        // It waits for the lock, and has applied nothing meanwhile.
        await until(
          instance,
          `SELECT count(*) = 1 AS yes FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
          running,
        );
        const tableWhileWaiting = await instance.query<{ table: string | null }>(
          `SELECT to_regclass('migrations')::text AS table`,
        );
        await instance.query('SELECT pg_advisory_unlock($1, $2)', [0x70657473, 2]);
        const first = await running;
        const second = await migrate(url.toString());
        const recorded = await instance.query<{ count: number }>('SELECT count(*)::int AS count FROM migrations');

        expect(tableWhileWaiting.rows[0]?.table).toBeNull();
        expect({ code: first.code, stderr: first.stderr }).toEqual({ code: 0, stderr: '' });
        expect(first.stdout.trim().split('\n')).toEqual(MIGRATIONS.map((migration) => `Applied ${migration.name}`));
        expect(recorded.rows[0]?.count).toBe(MIGRATIONS.length);
        expect(second).toEqual({ code: 0, stdout: 'No migration pending.\n', stderr: '' });
      } finally {
        await instance.end();
        await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
        await admin.end();
      }
    },
  );
});
