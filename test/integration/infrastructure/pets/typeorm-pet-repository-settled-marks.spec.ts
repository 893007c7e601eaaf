import { jest } from '@jest/globals';
import { DataSource, type QueryRunner } from 'typeorm';
import { ListPets } from '../../../../src/application/pets/list-pets.js';
import {
  SETTLE_LOCK_TIMEOUT_MS,
  SETTLE_PAUSE_MS,
  TypeOrmSettledMarks,
} from '../../../../src/infrastructure/pets/typeorm-settled-marks.js';
import { TypeOrmPetRepository } from '../../../../src/infrastructure/pets/typeorm-pet-repository.js';
import { dataSourceOptions } from '../../../../src/infrastructure/schema/data-source-options.js';
import { openTestDatabase, type TestDatabase } from '../../../support/database.js';
import { aNewPet } from '../../../support/pets.js';
import { startStallingProxy } from '../../../support/stalling-proxy.js';

// Creates overlap: writer A draws an id and holds its transaction open, writer B draws a later id
// and commits. A pager served B's pet before A's has settled would page past A's for good.
let database: TestDatabase;
const open: QueryRunner[] = [];

beforeAll(async () => {
  database = await openTestDatabase();
});
afterAll(async () => {
  await database.close();
});
beforeEach(async () => {
  await database.reset();
});
afterEach(async () => {
  for (const runner of open.splice(0)) await runner.release();
});

function pets(dataSource = database.dataSource): TypeOrmPetRepository {
  return new TypeOrmPetRepository(dataSource.manager);
}

/** A writer on a connection of its own, inside a transaction the test ends. */
async function writer(): Promise<QueryRunner> {
  const runner = database.dataSource.createQueryRunner();
  open.push(runner);
  await runner.connect();
  await runner.startTransaction();
  return runner;
}

/** The service's create statement, in the writer's transaction. */
async function drawLocked(runner: QueryRunner): Promise<number> {
  return (await new TypeOrmPetRepository(runner.manager).add(aNewPet())).id;
}

/** The negative control: an insert that draws its id without the lock. */
async function drawUnlocked(runner: QueryRunner): Promise<number> {
  const rows: unknown = await runner.query(
    `INSERT INTO pets (name, category_id, status) VALUES ('Rex', 1, 'available') RETURNING id`,
  );
  return Number(Array.isArray(rows) ? Reflect.get(Object(rows[0]), 'id') : undefined);
}

/** Until PostgreSQL shows a settled mark queued for this schema's pets lock (a bigint key below 2^32: objid). */
async function untilAMarkWaits(): Promise<void> {
  for (;;) {
    const [row] = await database.dataSource.query<{ waiting: string }[]>(
      `SELECT count(*) AS waiting FROM pg_locks WHERE locktype = 'advisory' AND mode = 'ExclusiveLock' AND NOT granted
         AND classid = 0 AND objid = 'pets'::regclass::oid`,
    );
    if (Number(row?.waiting) > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function idsOf(page: { pets: { id: number }[] }): number[] {
  return page.pets.map((pet) => pet.id);
}

describe('Paging while creates overlap', () => {
  it.each([
    ['drawn under the shared lock, is not served before the earlier one settles', drawLocked, false],
    ['drawn without the lock (negative control), is served first: the race is caught', drawUnlocked, true],
  ])('a later id, %s', async (_case, draw, servedFirst) => {
    // No pause after a mark gives up, so that the page after A's commit reads a fresh one.
    const marks = new TypeOrmSettledMarks(database.dataSource, { lockTimeoutMs: SETTLE_LOCK_TIMEOUT_MS, pauseMs: 0 });
    const listPets = new ListPets(pets(), marks);
    const before = await pets().add(aNewPet());
    await listPets.execute({ limit: 100 });

    const a = await writer();
    const idA = await draw(a);
    const b = await writer();
    const idB = await draw(b);
    await b.commitTransaction();
    const whileAInFlight = idsOf(await listPets.execute({ limit: 100 }));
    await a.commitTransaction();

    expect(idB).toBeGreaterThan(idA);
    expect(whileAInFlight.includes(idB) && !whileAInFlight.includes(idA)).toBe(servedFirst);
    expect(whileAInFlight).toContain(before.id);
    // Once A has settled, a short page reads a fresh mark: both are served.
    expect(idsOf(await listPets.execute({ limit: 100 }))).toEqual([before.id, idA, idB]);
  });

  it.each([
    ['commits', true],
    ['rolls back', false],
  ])('a page that reaches an id in flight waits until its writer %s, then serves what settled', async (_, commits) => {
    // A bound far beyond the test's, so that the page waits for A rather than giving up.
    const marks = new TypeOrmSettledMarks(database.dataSource, { lockTimeoutMs: 60_000, pauseMs: SETTLE_PAUSE_MS });
    const listPets = new ListPets(pets(), marks);
    const a = await writer();
    const idA = await drawLocked(a);
    const b = await writer();
    const idB = await drawLocked(b);
    await b.commitTransaction();

    let served: number[] | null = null;
    const page = listPets.execute({ limit: 100 }).then((result) => (served = idsOf(result)));
    await untilAMarkWaits();
    expect(served).toBeNull();
    await (commits ? a.commitTransaction() : a.rollbackTransaction());
    await page;

    expect(served).toEqual(commits ? [idA, idB] : [idB]);
  });

  it('runs one mark statement at a time: pages that ask while one runs share the next', async () => {
    const marks = new TypeOrmSettledMarks(database.dataSource);
    const statements = jest.spyOn(database.dataSource, 'query');
    try {
      const first = marks.fresh();
      const second = marks.fresh();
      const third = marks.fresh();
      await Promise.all([first, second, third]);

      // The first may have read its mark before the others asked: they get one read after.
      expect(second).toBe(third);
      expect(second).not.toBe(first);
      expect(statements).toHaveBeenCalledTimes(2);
    } finally {
      statements.mockRestore();
    }
  });

  it('gives a mark at or above every create acknowledged before it was asked for', async () => {
    const marks = new TypeOrmSettledMarks(database.dataSource);
    await marks.fresh();
    const created = await pets().add(aNewPet());

    expect((await marks.fresh()).upToId).toBeGreaterThanOrEqual(created.id);
  });
});

describe('A writer whose connection goes silent mid-transaction', () => {
  it(`delays pages and other creates by about ${SETTLE_LOCK_TIMEOUT_MS} ms, and its id is never passed`, async () => {
    const proxy = await startStallingProxy(database.url);
    const silentSide = await new DataSource({
      ...dataSourceOptions(proxy.url, database.schema),
      migrationsRun: false,
    }).initialize();
    const listPets = new ListPets(pets(), new TypeOrmSettledMarks(database.dataSource));
    try {
      const before = await pets().add(aNewPet());
      await listPets.execute({ limit: 100 });
      const silent = silentSide.createQueryRunner();
      await silent.connect();
      await silent.startTransaction();
      const silentId = (await new TypeOrmPetRepository(silent.manager).add(aNewPet())).id;
      proxy.stall();

      // What is measured: a page that must read a new mark (the last one is below the pets created
      // since), and a create that arrives while that mark waits, queued behind it.
      const after = await pets().add(aNewPet());
      const pageStarted = performance.now();
      const page = listPets.execute({ limit: 100 }).then((result) => ({ ids: idsOf(result), at: performance.now() }));
      await untilAMarkWaits();
      const createStarted = performance.now();
      const queued = await pets().add(aNewPet());
      const createMs = performance.now() - createStarted;
      const served = await page;
      const pageMs = served.at - pageStarted;

      console.log(
        `silent writer: a page waited ${pageMs.toFixed(0)} ms, a create queued behind its mark ${createMs.toFixed(0)} ms`,
      );
      // The bound of docs/operations.md is SETTLE_LOCK_TIMEOUT_MS; the margin is for a loaded machine.
      expect(pageMs).toBeGreaterThanOrEqual(SETTLE_LOCK_TIMEOUT_MS * 0.9);
      expect(pageMs).toBeLessThan(SETTLE_LOCK_TIMEOUT_MS + 1500);
      expect(createMs).toBeLessThan(SETTLE_LOCK_TIMEOUT_MS + 1500);
      // Served up to the last mark: nothing past the silent writer's id.
      expect(served.ids).toEqual([before.id]);

      // PostgreSQL ends the silent session (idle_in_transaction_session_timeout): its id never
      // appears, and the pets created after it are served once a page may read a mark again.
      let ids: number[] = [];
      const deadline = Date.now() + 20_000;
      while (!ids.includes(queued.id) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        ids = idsOf(await listPets.execute({ limit: 100 }));
      }
      expect(ids).toEqual([before.id, after.id, queued.id]);
      expect(ids).not.toContain(silentId);
    } finally {
      proxy.resume();
      await silentSide.destroy().catch(() => undefined);
      await proxy.close();
    }
  }, 30_000);
});
