import { execFile } from 'node:child_process';
import pg from 'pg';
import { MIGRATIONS } from '../../src/infrastructure/schema/migrations.js';
import { inheritedEnv } from '../support/process.js';

const DATABASE_URL = process.env.DATABASE_URL ?? '';
const withServer = DATABASE_URL === '' ? it.skip : it;

/**
 * `npm run migration:run` as it runs after its build: node dist/src/migrate.js; with `--revert`,
 * `npm run migration:revert`.
 */
function migrate(databaseUrl: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['dist/src/migrate.js', ...args],
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

const MIGRATIONS_LOCK = [0x70657473, 2];
const WAITING_FOR_A_LOCK = `SELECT count(*) = 1 AS yes FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`;

/** A database of its own for `test`, dropped after it; `test` gets its URL. */
async function withDatabase(name: string, test: (url: string) => Promise<void>): Promise<void> {
  const database = `petstore_${name}_${process.pid}`;
  const admin = await connected(DATABASE_URL);
  await admin.query(`CREATE DATABASE ${database}`);
  const url = new URL(DATABASE_URL);
  url.pathname = `/${database}`;
  try {
    await test(url.toString());
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.end();
  }
}

describe('npm run migration:run', () => {
  withServer('applies the pending migrations under the lock the instances take at start, then finds none pending', () =>
    withDatabase('migrate', async (url) => {
      // An instance applying migrations holds this lock (src/infrastructure/platform/database/database.ts).
      const instance = await connected(url);
      try {
        await instance.query('SELECT pg_advisory_lock($1, $2)', MIGRATIONS_LOCK);

        const running = migrate(url);
        // It waits for the lock, and has applied nothing meanwhile.
        await until(instance, WAITING_FOR_A_LOCK, running);
        const tableWhileWaiting = await instance.query<{ table: string | null }>(
          `SELECT to_regclass('migrations')::text AS table`,
        );
        await instance.query('SELECT pg_advisory_unlock($1, $2)', MIGRATIONS_LOCK);
        const first = await running;
        const second = await migrate(url);
        const recorded = await instance.query<{ count: number }>('SELECT count(*)::int AS count FROM migrations');

        expect(tableWhileWaiting.rows[0]?.table).toBeNull();
        expect({ code: first.code, stderr: first.stderr }).toEqual({ code: 0, stderr: '' });
        expect(first.stdout.trim().split('\n')).toEqual(MIGRATIONS.map((migration) => `Applied ${migration.name}`));
        expect(recorded.rows[0]?.count).toBe(MIGRATIONS.length);
        expect(second).toEqual({ code: 0, stdout: 'No migration pending.\n', stderr: '' });
      } finally {
        await instance.end();
      }
    }),
  );
});

describe('npm run migration:revert', () => {
  withServer('undoes the last migration under the same lock, and migration:run applies it again', () =>
    withDatabase('revert', async (url) => {
      const nothingYet = await migrate(url, '--revert');
      expect(nothingYet).toEqual({ code: 0, stdout: 'No migration to revert.\n', stderr: '' });
      expect((await migrate(url)).code).toBe(0);

      const instance = await connected(url);
      try {
        await instance.query('SELECT pg_advisory_lock($1, $2)', MIGRATIONS_LOCK);
        const running = migrate(url, '--revert');
        // It waits for the lock, and has undone nothing meanwhile.
        await until(instance, WAITING_FOR_A_LOCK, running);
        const whileWaiting = await instance.query<{ count: number }>('SELECT count(*)::int AS count FROM migrations');
        await instance.query('SELECT pg_advisory_unlock($1, $2)', MIGRATIONS_LOCK);
        const reverted = await running;
        const after = await instance.query<{ count: number; floor_function: string | null }>(
          `SELECT count(*)::int AS count, to_regprocedure('pets_note_id_floor()')::text AS floor_function FROM migrations`,
        );
        const again = await migrate(url);
        const reapplied = await instance.query<{ floor_function: string | null }>(
          `SELECT to_regprocedure('pets_note_id_floor()')::text AS floor_function`,
        );

        const last = MIGRATIONS[MIGRATIONS.length - 1]!.name;
        expect(whileWaiting.rows[0]?.count).toBe(MIGRATIONS.length);
        expect(reverted).toEqual({ code: 0, stdout: `Reverted ${last}\n`, stderr: '' });
        // The last migration makes the trigger that notes the ids' floor: its down dropped it and its function.
        expect(after.rows[0]).toEqual({ count: MIGRATIONS.length - 1, floor_function: null });
        expect(again).toEqual({ code: 0, stdout: `Applied ${last}\n`, stderr: '' });
        expect(reapplied.rows[0]).toEqual({ floor_function: 'pets_note_id_floor()' });
      } finally {
        await instance.end();
      }
    }),
  );

  withServer('refuses an argument it does not know, and touches nothing', () =>
    withDatabase('revert_usage', async (url) => {
      const result = await migrate(url, '--undo');
      const client = await connected(url);
      const table = await client.query<{ table: string | null }>(`SELECT to_regclass('migrations')::text AS table`);
      await client.end();

      expect(result.code).toBe(1);
      expect(result.stderr).toContain('Unknown arguments: --undo');
      expect(table.rows[0]?.table).toBeNull();
    }),
  );
});
