import { openTestDatabase, type TestDatabase } from '../../../support/database.js';

let database: TestDatabase;

beforeAll(async () => {
  database = await openTestDatabase();
});
afterAll(async () => {
  await database.close();
});

describe('the records', () => {
  it('cover every table the migrations create', async () => {
    const rows: { table_name: string }[] = await database.dataSource.query(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_name <> 'migrations'`,
    );

    const recorded = database.dataSource.entityMetadatas.map((metadata) => metadata.tableName);
    expect(recorded.sort()).toEqual(rows.map((row) => row.table_name).sort());
  });

  it('state the schema the migrations create, to the last index, constraint and default: TypeORM finds nothing to change', async () => {
    const { upQueries } = await database.dataSource.driver.createSchemaBuilder().log();

    expect(upQueries.map((query) => query.query)).toEqual([]);
  });
});
