import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../../../../src/infrastructure/schema/data-source-options.js';
import {
  PAGE_TEXT,
  pageWithStatusText,
  TypeOrmPetRepository,
} from '../../../../src/infrastructure/pets/typeorm-pet-repository.js';
import { describePetRepositoryContract } from '../../../contracts/pet-repository.contract.js';
import { openTestDatabase, type TestDatabase } from '../../../support/database.js';
import { aNewPet } from '../../../support/pets.js';
import { startTcpProxy } from '../../../support/tcp-proxy.js';
import { StoreUnavailableError } from '../../../../src/application/platform/store-unavailable-error.js';

let database: TestDatabase;
let repository: TypeOrmPetRepository;
/** Names each PREPARE of the plan tests apart: a session's connection goes back to the pool with them. */
let statementNumber = 0;

beforeAll(async () => {
  database = await openTestDatabase();
  repository = new TypeOrmPetRepository(database.dataSource.manager);
});
afterAll(async () => {
  await database.close();
});
beforeEach(async () => {
  await database.reset();
});

describePetRepositoryContract('TypeOrmPetRepository', () => ({ repository: () => repository }));

describe('TypeOrmPetRepository on PostgreSQL', () => {
  it('stores ids as bigint identities, starting at 1', async () => {
    const pet = await repository.add(aNewPet());

    expect(pet.id).toBe(1);
    const [column] = await database.dataSource.query<unknown[]>(
      `SELECT data_type, is_identity FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'pets' AND column_name = 'id'`,
    );
    expect(column).toEqual({ data_type: 'bigint', is_identity: 'YES' });
  });

  it('refuses to return an id beyond 2^53-1 rather than round it', async () => {
    await database.dataSource.query(`SELECT setval('pets_id_seq', 9007199254740992)`);
    await database.dataSource.query(`INSERT INTO pets (name, category_id, status) VALUES ('Big', 1, 'sold')`);

    await expect(repository.list({ limit: 10 })).rejects.toThrow(/exceeds 2\^53-1/);
    await expect(repository.list({ status: 'sold', limit: 10 })).rejects.toThrow(/exceeds 2\^53-1/);
  });

  // The pages are prepared: their first five runs on a connection are custom plans, then a
  // generic plan may take over. Both must walk the index.
  it.each([
    ['with a rare status', pageWithStatusText('sold'), '15000, 20000, 21', 'pets_status_id_idx', 'force_custom_plan'],
    [
      'with a rare status, on its generic plan',
      pageWithStatusText('sold'),
      '15000, 20000, 21',
      'pets_status_id_idx',
      'force_generic_plan',
    ],
    [
      'with an absent status, on its generic plan',
      pageWithStatusText('pending'),
      '0, 20000, 21',
      'pets_status_id_idx',
      'force_generic_plan',
    ],
    ['without one', PAGE_TEXT, '15000, 20000, 21', 'pets_pkey', 'force_custom_plan'],
    ['without one, on its generic plan', PAGE_TEXT, '15000, 20000, 21', 'pets_pkey', 'force_generic_plan'],
  ])(
    'pages %s by walking an index, with no sort and no offset, even deep in the table',
    async (_case, sql, parameters, index, planCacheMode) => {
      await database.dataSource.query(
        `INSERT INTO pets (name, category_id, status) SELECT 'p' || i, 1, CASE WHEN i % 100 = 0 THEN 'sold' ELSE 'available' END FROM generate_series(1, 20000) i`,
      );
      await database.dataSource.query('ANALYZE pets');
      const session = database.dataSource.createQueryRunner();
      statementNumber += 1;
      try {
        // The service's own statement, deep in the table, on the plan it gets.
        await session.query(`SET plan_cache_mode = ${planCacheMode}`);
        await session.query(`PREPARE page_${statementNumber} AS ${sql}`);
        const plan = await session.manager.query<{ 'QUERY PLAN': string }[]>(
          `EXPLAIN EXECUTE page_${statementNumber}(${parameters})`,
        );
        const text = plan.map((row) => row['QUERY PLAN']).join('\n');

        expect(text).toContain(`Index Scan using ${index}`);
        expect(text).not.toMatch(/Sort|Seq Scan/);
      } finally {
        await session.release();
      }
    },
  );

  it('has PostgreSQL parse its statements once per connection, and reuse them', async () => {
    const options = dataSourceOptions(database.url, database.schema);
    // One connection, so the statements are looked for where they ran.
    const single = await new DataSource({ ...options, extra: { ...options.extra, max: 1 } }).initialize();
    try {
      const pets = new TypeOrmPetRepository(single.manager);
      const { id } = await pets.add(aNewPet());
      await pets.findById(id);
      for (let page = 0; page < 7; page++) await pets.list({ limit: 1 });
      await pets.list({ status: 'sold', limit: 1 });

      // PostgreSQL counts each run of a prepared statement as a custom or a generic plan.
      const statements = await single.query<{ name: string; runs: number }[]>(
        'SELECT name, (custom_plans + generic_plans)::int AS runs FROM pg_prepared_statements ORDER BY name',
      );
      expect(statements).toEqual([
        { name: 'pets_by_id', runs: 1 },
        { name: 'pets_insert', runs: 1 },
        { name: 'pets_page', runs: 7 },
        { name: 'pets_page_sold', runs: 1 },
      ]);
    } finally {
      await single.destroy();
    }
  });

  it('keeps the database checks as a backstop behind the domain rules', async () => {
    await expect(
      database.dataSource.query(`INSERT INTO pets (name, category_id, status) VALUES ('x', 1, 'lost')`),
    ).rejects.toThrow(/check constraint/);
    await expect(
      database.dataSource.query(`INSERT INTO pets (name, category_id, status) VALUES ('x', 0, 'sold')`),
    ).rejects.toThrow(/check constraint/);
  });

  it('throws StoreUnavailableError, not a driver error, when the database goes away, and recovers when it returns', async () => {
    const proxy = await startTcpProxy(database.url);
    const viaProxy = new DataSource(dataSourceOptions(proxy.url, database.schema));
    await viaProxy.initialize();
    const flaky = new TypeOrmPetRepository(viaProxy.manager);
    try {
      await proxy.cut();

      await expect(flaky.list({ limit: 1 })).rejects.toBeInstanceOf(StoreUnavailableError);
      await expect(flaky.add(aNewPet())).rejects.toBeInstanceOf(StoreUnavailableError);
      await expect(flaky.findById(1)).rejects.toBeInstanceOf(StoreUnavailableError);

      await proxy.restore();
      await expect(flaky.list({ limit: 1 })).resolves.toEqual([]);
    } finally {
      await viaProxy.destroy();
      await proxy.close();
    }
  });
});
