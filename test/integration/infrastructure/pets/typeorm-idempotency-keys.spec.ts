import { expect } from '@jest/globals';
import { DataSource, type Logger } from 'typeorm';
import { CreatePet } from '../../../../src/application/pets/create-pet.js';
import { IdempotencyConflictError } from '../../../../src/application/pets/errors.js';
import { type PetTransaction } from '../../../../src/application/pets/ports.js';
import { StoreUnavailableError } from '../../../../src/application/platform/store-unavailable-error.js';
import { TypeOrmPetRepository } from '../../../../src/infrastructure/pets/typeorm-pet-repository.js';
import { WRITERS_OF_PETS } from '../../../../src/infrastructure/pets/typeorm-high-water-mark-reading.js';
import { TypeOrmPetTransactions } from '../../../../src/infrastructure/pets/typeorm-pet-transactions.js';
import { dataSourceOptions } from '../../../../src/infrastructure/schema/data-source-options.js';
import { openTestDatabase, petTransactionsOn, type TestDatabase } from '../../../support/database.js';
import { aNewPet } from '../../../support/pets.js';
import { startTcpProxy } from '../../../support/tcp-proxy.js';

let database: TestDatabase;
let transactions: TypeOrmPetTransactions;

beforeAll(async () => {
  database = await openTestDatabase();
  transactions = petTransactionsOn(database.dataSource);
});
afterAll(async () => {
  await database.close();
});
beforeEach(async () => {
  await database.reset();
});

const key = { caller: 'caller-a', key: 'key-1' };

async function count(table: 'pets' | 'idempotency_keys'): Promise<number> {
  const [row] = await database.dataSource.query<{ n: number }[]>(`SELECT count(*)::int AS n FROM ${table}`);
  return Number(row?.n);
}

/** A transaction that claims the key, stores a pet and remembers it, the way CreatePet does. */
function createIn({ pets, keys }: PetTransaction, name = 'Rex', fingerprint = 'body-1'): Promise<number> {
  return keys.claim(key).then(async () => {
    const pet = await pets.add(aNewPet({ name }));
    await keys.remember(key, { fingerprint, petId: pet.id });
    return pet.id;
  });
}

/** A transaction held open, after `begin` ran in it, until `finish` is called. */
function heldOpen(begin: (transaction: PetTransaction) => Promise<unknown>) {
  let finish: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  let started: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (started = resolve));
  const done = transactions.run(async (transaction) => {
    await begin(transaction);
    started();
    await finished;
  });
  return { ready, finish, done };
}

describe('TypeOrmIdempotencyKeys in a TypeOrmPetTransactions transaction', () => {
  it('keeps the pet and its record when the work resolves: a later transaction finds the record', async () => {
    const petId = await transactions.run((transaction) => createIn(transaction));

    const found = await transactions.run(({ keys }) => keys.find(key));

    expect(found).toEqual({ fingerprint: 'body-1', petId });
    expect(await transactions.run(({ keys }) => keys.find({ ...key, caller: 'caller-b' }))).toBeNull();
    expect(await count('pets')).toBe(1);
  });

  it('keeps neither the pet nor its record when the work throws, lets its error out unchanged, and frees the key', async () => {
    const failure = new Error('crash between the record and COMMIT');

    await expect(
      transactions.run(async (transaction) => {
        await createIn(transaction, 'lost');
        throw failure;
      }),
    ).rejects.toBe(failure);

    expect(await count('pets')).toBe(0);
    expect(await count('idempotency_keys')).toBe(0);
    await expect(transactions.run((transaction) => createIn(transaction))).resolves.toEqual(expect.any(Number));
  });

  it('refuses the claim of a key another transaction holds, at once, and grants it when that one ends', async () => {
    const first = heldOpen(({ keys }) => keys.claim(key));
    await first.ready;

    await expect(transactions.run(({ keys }) => keys.claim(key))).rejects.toBeInstanceOf(IdempotencyConflictError);

    first.finish();
    await first.done;
    await expect(transactions.run(({ keys }) => keys.claim(key))).resolves.toBeUndefined();
  });

  it('keeps two keys apart whose hashtext values collide: no false conflict while one is held', async () => {
    const [hashes] = await database.dataSource.query<{ a: number; b: number }[]>(
      `SELECT hashtext('k176902') AS a, hashtext('k298202') AS b`,
    );
    expect(hashes?.a).toBe(hashes?.b);
    const first = heldOpen(({ keys }) => keys.claim({ ...key, key: 'k176902' }));
    await first.ready;

    const other = transactions.run(({ keys }) => keys.claim({ ...key, key: 'k298202' }));

    await expect(other).resolves.toBeUndefined();
    first.finish();
    await first.done;
  });

  it('is a writer of pets from its create to COMMIT, so that a high-water mark waits for the transaction', async () => {
    const sharedHolds = async () => {
      const [row] = await database.dataSource.query<{ n: number }[]>(
        `SELECT count(*)::int AS n FROM pg_locks WHERE ${WRITERS_OF_PETS}`,
      );
      return Number(row?.n);
    };
    const creating = heldOpen((transaction) => createIn(transaction));
    await creating.ready;

    expect(await sharedHolds()).toBe(1);

    creating.finish();
    await creating.done;
    expect(await sharedHolds()).toBe(0);
  });

  it('forgets a record after its retention period, and a new create takes its row over', async () => {
    await transactions.run((transaction) => createIn(transaction, 'first'));
    await database.dataSource.query(`UPDATE idempotency_keys SET expires_at = now() - interval '1 second'`);

    expect(await transactions.run(({ keys }) => keys.find(key))).toBeNull();
    const petId = await transactions.run((transaction) => createIn(transaction, 'second', 'body-2'));

    expect(await transactions.run(({ keys }) => keys.find(key))).toEqual({ fingerprint: 'body-2', petId });
    expect(await count('idempotency_keys')).toBe(1);
  });

  it('keeps a record for 24 hours', async () => {
    await transactions.run((transaction) => createIn(transaction));

    const [row] = await database.dataSource.query<{ seconds: number }[]>(
      `SELECT extract(epoch FROM expires_at - created_at)::int AS seconds FROM idempotency_keys`,
    );
    expect(row?.seconds).toBe(24 * 60 * 60);
  });

  it('throws StoreUnavailableError, not a driver error, when the database goes away mid-transaction', async () => {
    const proxy = await startTcpProxy(database.url);
    const viaProxy = await new DataSource(dataSourceOptions(proxy.url, database.schema)).initialize();
    try {
      const failing = petTransactionsOn(viaProxy).run(async ({ keys }) => {
        await keys.claim(key);
        await proxy.cut();
        return keys.find(key);
      });

      await expect(failing).rejects.toBeInstanceOf(StoreUnavailableError);
    } finally {
      await proxy.restore();
      await viaProxy.destroy();
      await proxy.close();
    }
  });

  it('runs a keyed create in six statements, BEGIN and COMMIT included, and a replay in five', async () => {
    const statements: string[] = [];
    const logger: Logger = {
      logQuery: (query) => statements.push(typeof query === 'string' ? query : 'a prepared statement'),
      logQueryError: () => undefined,
      logQuerySlow: () => undefined,
      logSchemaBuild: () => undefined,
      logMigration: () => undefined,
      log: () => undefined,
    };
    const counted = await new DataSource({ ...dataSourceOptions(database.url, database.schema), logger }).initialize();
    try {
      const createPet = new CreatePet(new TypeOrmPetRepository(counted.manager), petTransactionsOn(counted));
      statements.length = 0;

      await createPet.execute({ name: 'Rex', categoryId: 1 }, key);
      const created = statements.splice(0);
      await createPet.execute({ name: 'Rex', categoryId: 1 }, key);

      expect(created).toHaveLength(6);
      expect(statements).toHaveLength(5);
    } finally {
      await counted.destroy();
    }
  });
});
