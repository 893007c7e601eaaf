import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import pg from 'pg';
import type { DataSource, MigrationInterface, QueryRunner } from 'typeorm';
import { openDataSource } from '../../../../src/infrastructure/platform/database/database.js';
import { dataSourceOptions } from '../../../../src/infrastructure/schema/data-source-options.js';
import { MIGRATIONS } from '../../../../src/infrastructure/schema/migrations.js';
import { openTestDatabase, type TestDatabase } from '../../../support/database.js';

let database: TestDatabase;

beforeAll(async () => {
  database = await openTestDatabase();
});
afterAll(async () => {
  await database.close();
});

async function tables(): Promise<string[]> {
  const rows: { table_name: string }[] = await database.dataSource.query(
    `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY table_name`,
  );
  return rows.map((row) => row.table_name);
}

describe('migrations', () => {
  it('create the schema, revert cleanly and apply again', async () => {
    expect(await tables()).toEqual(['api_keys', 'idempotency_keys', 'migrations', 'pets', 'service_secrets']);

    while ((await database.dataSource.query<unknown[]>('SELECT 1 FROM migrations')).length > 0)
      await database.dataSource.undoLastMigration();
    expect(await tables()).toEqual(['migrations']);

    await database.dataSource.runMigrations();
    expect(await tables()).toEqual(['api_keys', 'idempotency_keys', 'migrations', 'pets', 'service_secrets']);
  });

  it('keep the idempotency records of a deployment made before they pointed at the pet', async () => {
    while (
      (
        await database.dataSource.query<unknown[]>(
          `SELECT 1 FROM migrations WHERE name = 'IdempotencyKeepsThePet1795392000000'`,
        )
      ).length > 0
    ) {
      await database.dataSource.undoLastMigration();
    }
    await database.dataSource.query(`INSERT INTO pets (name, category_id, status) VALUES ('Rex', 3, 'sold')`);
    await database.dataSource.query(
      `INSERT INTO idempotency_keys (caller, key, fingerprint, response_status, response_body, response_location, expires_at)
       VALUES ('c', 'k', 'f', 201, '{"id":1,"name":"Rex","categoryId":3,"status":"sold"}', '/v1/pets/1', now() + interval '1 hour')`,
    );

    await database.dataSource.runMigrations();

    expect(await database.dataSource.query(`SELECT caller, key, fingerprint, pet_id FROM idempotency_keys`)).toEqual([
      { caller: 'c', key: 'k', fingerprint: 'f', pet_id: '1' },
    ]);
    await database.reset();
  });

  // Three instances of a new deployment starting at once on a database its migrations have not reached.
  it('run once when instances start together: every instance starts, each migration is applied once', async () => {
    await inEmptySchema(async (schema) => {
      const opening = [1, 2, 3].map(() =>
        openDataSource({ ...dataSourceOptions(database.url, schema), migrationsRun: true }),
      );
      const started = await Promise.allSettled(opening);
      const opened = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
      try {
        expect(started.map((result) => (result.status === 'rejected' ? String(result.reason) : 'started'))).toEqual([
          'started',
          'started',
          'started',
        ]);
        const applied: { name: string }[] = await database.dataSource.query(`SELECT name FROM ${schema}.migrations`);
        expect(applied.map((row) => row.name).sort()).toEqual(MIGRATIONS.map((migration) => migration.name).sort());
      } finally {
        await Promise.all(opened.map((dataSource: DataSource) => dataSource.destroy()));
      }
    });
  });

  // An index build or a back-fill on a large table takes longer than a request's statement limit.
  it('may run longer than a request statement is allowed to', async () => {
    const SlowMigration = migrationRunning('SlowMigration1999999999999', 'SELECT pg_sleep(2.5)');
    await inEmptySchema(async (schema) => {
      const options = dataSourceOptions(database.url, schema);
      // One connection: the query below runs on the one the migrations ran on.
      const opened = await openDataSource({
        ...options,
        extra: { ...options.extra, max: 1 },
        migrations: [...MIGRATIONS, SlowMigration],
        migrationsRun: true,
      });
      try {
        const applied: unknown[] = await opened.query(
          `SELECT 1 FROM migrations WHERE name = 'SlowMigration1999999999999'`,
        );
        expect(applied).toHaveLength(1);
        // Back to a request's limit afterwards.
        await expect(opened.query('SELECT pg_sleep(2.5)')).rejects.toThrow(/statement timeout/);
      } finally {
        await opened.destroy();
      }
    });
  });

  // A migration's ALTER TABLE waits for the table's lock behind the requests of instances still
  // running, and every request after it queues behind the ALTER: it may wait only as long as a
  // request's statement may (lock_timeout, 2 s), not as long as the wait for another instance's
  // migrations (60 s, past this test's limit).
  it('wait for a table lock only as long as a request would, then the start fails', async () => {
    const AddColumn = migrationRunning('AddColumn1999999999998', 'ALTER TABLE pets ADD COLUMN nickname text');
    await inEmptySchema(async (schema) => {
      const options = dataSourceOptions(database.url, schema);
      const withNewColumn = { ...options, migrations: [...MIGRATIONS, AddColumn], migrationsRun: true };
      const reader = new pg.Client({ connectionString: database.url });
      await reader.connect();
      try {
        await (await openDataSource({ ...options, migrationsRun: true })).destroy();
        // A request of a running instance, holding its lock on pets.
        await reader.query(`BEGIN; SELECT count(*) FROM ${schema}.pets`);

        await expect(openDataSource(withNewColumn)).rejects.toThrow(/lock timeout/);
        await reader.query('ROLLBACK');
        // Nothing half-done: the migration is not recorded, and a later start applies it.
        const started = await openDataSource(withNewColumn);
        try {
          const column: unknown[] = await started.query(
            `SELECT 1 FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'pets' AND column_name = 'nickname'`,
            [schema],
          );
          expect(column).toHaveLength(1);
        } finally {
          await started.destroy();
        }
      } finally {
        await reader.end();
      }
    });
  }, 20_000);

  it('are all listed: every file in src/infrastructure/schema/migrations is in MIGRATIONS (src/infrastructure/schema/migrations.ts), in order', async () => {
    const files = (await readdir('src/infrastructure/schema/migrations')).filter((file) => file.endsWith('.ts')).sort();

    expect(MIGRATIONS.map((migration) => migration.name)).toEqual(
      files.map((file) => `${pascalCase(file.replace(/^\d+-|\.ts$/g, ''))}${file.split('-')[0]}`),
    );
    expect(await database.dataSource.showMigrations()).toBe(false);
  });
});

/** create-pets -> CreatePets: the class name a migration file is expected to export. */
function pascalCase(kebab: string): string {
  return kebab.replace(/(^|-)(\w)/g, (_match, _dash, letter: string) => letter.toUpperCase());
}

/** A schema of its own that no migration has reached yet, dropped afterwards. */
async function inEmptySchema(test: (schema: string) => Promise<void>): Promise<void> {
  const schema = `test_${randomBytes(6).toString('hex')}`;
  await database.dataSource.query(`CREATE SCHEMA ${schema}`);
  try {
    await test(schema);
  } finally {
    await database.dataSource.query(`DROP SCHEMA ${schema} CASCADE`);
  }
}

/** A migration of one statement, named (with its timestamp) as TypeORM records it. */
function migrationRunning(name: string, sql: string): new () => MigrationInterface {
  return class implements MigrationInterface {
    name = name;
    async up(queryRunner: QueryRunner): Promise<void> {
      await queryRunner.query(sql);
    }
    async down(): Promise<void> {}
  };
}
