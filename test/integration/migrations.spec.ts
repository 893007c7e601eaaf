import { openTestDatabase, type TestDatabase } from '../support/database.js';

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
    expect(await tables()).toEqual(['api_keys', 'idempotency_keys', 'migrations', 'pets']);

    while ((await database.dataSource.query('SELECT 1 FROM migrations')).length > 0) await database.dataSource.undoLastMigration();
    expect(await tables()).toEqual(['migrations']);

    await database.dataSource.runMigrations();
    expect(await tables()).toEqual(['api_keys', 'idempotency_keys', 'migrations', 'pets']);
  });

  it('have nothing pending once applied', async () => {
    expect(await database.dataSource.showMigrations()).toBe(false);
  });
});
