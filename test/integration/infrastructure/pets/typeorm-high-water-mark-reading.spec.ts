import { jest } from '@jest/globals';
import { DataSource, type QueryRunner } from 'typeorm';
import { CreatePet } from '../../../../src/application/pets/create-pet.js';
import { UnguardedStoreError } from '../../../../src/application/pets/errors.js';
import { ListPets } from '../../../../src/application/pets/list-pets.js';
import { type Reading, SharedHighWaterMarks } from '../../../../src/infrastructure/pets/high-water-marks.js';
import {
  MARK_OPTIONS,
  MARK_WAIT_LIMIT_MS,
  TypeOrmHighWaterMarkReading,
} from '../../../../src/infrastructure/pets/typeorm-high-water-mark-reading.js';
import { IDLE_IN_TRANSACTION_MS } from '../../../../src/infrastructure/platform/database/database.js';
import { TypeOrmPetRepository } from '../../../../src/infrastructure/pets/typeorm-pet-repository.js';
import { dataSourceOptions } from '../../../../src/infrastructure/schema/data-source-options.js';
import { openTestDatabase, petTransactionsOn, type TestDatabase } from '../../../support/database.js';
import { aNewPet } from '../../../support/pets.js';
import { startStallingProxy } from '../../../support/stalling-proxy.js';

// Creates overlap: writer A draws an id and holds its transaction open, writer B draws a later id
// and commits. A pager served B's pet before A's has settled would page past A's for good.
let database: TestDatabase;
/** The marks' own connections, so that a test can count their readings apart from pages and creates. */
let marksSide: DataSource;
const open: QueryRunner[] = [];

beforeAll(async () => {
  database = await openTestDatabase();
  marksSide = await new DataSource({
    ...dataSourceOptions(database.url, database.schema),
    migrationsRun: false,
  }).initialize();
});
afterAll(async () => {
  await marksSide.destroy();
  await database.close();
});
beforeEach(async () => {
  await database.reset();
  countMarksStatements();
});
afterEach(async () => {
  jest.restoreAllMocks();
  for (const runner of open.splice(0)) {
    // A writer a test left in flight must not go back to the pool in its transaction.
    if (runner.isTransactionActive) await runner.rollbackTransaction();
    await runner.release();
  }
  await database.dataSource.query(
    `ALTER SEQUENCE pets_id_seq CACHE 1; ALTER TABLE pets ENABLE ALWAYS TRIGGER pets_note_id_floor, ENABLE ALWAYS TRIGGER pets_refuse_id`,
  );
});

function pets(dataSource = database.dataSource): TypeOrmPetRepository {
  return new TypeOrmPetRepository(dataSource.manager);
}

/** Marks read on `dataSource` as pets.module.ts reads them, saying what it logs into `log`. */
function marksOn(
  dataSource: DataSource,
  log: string[] = [],
  read = (reading: Reading) => reading,
): SharedHighWaterMarks {
  const reading = new TypeOrmHighWaterMarkReading(dataSource, (line) => log.push(line));
  return new SharedHighWaterMarks(async () => read(await reading.read()), MARK_OPTIONS);
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
async function drawByTheService(runner: QueryRunner): Promise<number> {
  return (await new TypeOrmPetRepository(runner.manager).add(aNewPet())).id;
}

/** An insert by plain SQL, as a script or psql would send it, in the writer's transaction. */
async function drawByPlainSql(runner: QueryRunner): Promise<number> {
  const rows: unknown = await runner.query(
    `INSERT INTO pets (name, category_id, status) VALUES ('Rex', 1, 'available') RETURNING id`,
  );
  return Number(Array.isArray(rows) ? Reflect.get(Object(rows[0]), 'id') : undefined);
}

/** The negative control: a reading that lists no writer, as if nothing told the marks who writes. */
const blindToWriters = (reading: Reading): Reading => ({ ...reading, writers: [] });

/** The statements the marks have sent on their own connections, and the waits for more of them. */
const marksStatements = { count: 0, waits: [] as { at: number; resolve(): void }[] };

function countMarksStatements(): void {
  const query = marksSide.query.bind(marksSide);
  marksStatements.count = 0;
  marksStatements.waits = [];
  jest.spyOn(marksSide, 'query').mockImplementation((...statement) => {
    marksStatements.count++;
    for (const wait of marksStatements.waits.filter(({ at }) => at <= marksStatements.count)) wait.resolve();
    return query(...statement);
  });
}

/** Resolves when the marks have read the store `count` times from now: a mark that reads again waits for a writer. */
function marksRead(count: number): Promise<void> {
  return new Promise((resolve) => marksStatements.waits.push({ at: marksStatements.count + count, resolve }));
}

/** 'read again' when the marks read twice from now before `answer` settles (a writer keeps them waiting), else 'answered'. */
async function answeredOrReadAgain(answer: Promise<unknown>): Promise<'answered' | 'read again'> {
  const readAgain = marksRead(2);
  return Promise.race([answer.then(() => 'answered' as const), readAgain.then(() => 'read again' as const)]);
}

/** Milliseconds per create, one after another, through the pool. */
async function createMs(count: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    await pets().add(aNewPet());
    times.push(performance.now() - started);
  }
  return times;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

function idsOf(page: { pets: { id: number }[] }): number[] {
  return page.pets.map((pet) => pet.id);
}

describe('Paging while creates overlap', () => {
  it.each([
    ["by the service's create, is not served before the earlier one settles", drawByTheService, true],
    ['by plain SQL on other connections, is not served before the earlier one settles', drawByPlainSql, true],
    [
      'by plain SQL, to marks blind to writers (negative control), is served first: the race is caught',
      drawByPlainSql,
      false,
    ],
  ])('a later id, drawn %s', async (_case, draw, seesWriters) => {
    const listPets = new ListPets(pets(), marksOn(marksSide, [], seesWriters ? undefined : blindToWriters));
    const before = await pets().add(aNewPet());
    await listPets.execute({ limit: 100 });

    const a = await writer();
    const idA = await draw(a);
    const b = await writer();
    const idB = await draw(b);
    await b.commitTransaction();
    const readAgain = marksRead(2);
    const page = listPets.execute({ limit: 100 });
    // Either the page is served, or its mark reads a second time: the first reading found A in flight.
    const whileAInFlight = await Promise.race([page.then(idsOf), readAgain.then(() => null)]);
    await a.commitTransaction();

    expect(idB).toBeGreaterThan(idA);
    // Seeing writers: the page waits for A, then serves every pet acknowledged, in order.
    // Blind: nothing tells the mark A is in flight; a client paging on after B never sees A.
    if (seesWriters) {
      expect(whileAInFlight).toBeNull();
      expect(idsOf(await page)).toEqual([before.id, idA, idB]);
    } else {
      expect(whileAInFlight).toEqual([before.id, idB]);
      expect(await pets().list({ afterId: idB, limit: 100 })).toEqual([]);
    }
  });

  it.each([
    ['commits', true],
    ['rolls back', false],
  ])('a page that reaches an id in flight waits until its writer %s, then serves what settled', async (_, commits) => {
    const listPets = new ListPets(pets(), marksOn(marksSide));
    const a = await writer();
    const idA = await drawByTheService(a);
    const b = await writer();
    const idB = await drawByTheService(b);
    await b.commitTransaction();

    const page = listPets.execute({ limit: 100 });
    const whileAInFlight = await answeredOrReadAgain(page);
    await (commits ? a.commitTransaction() : a.rollbackTransaction());

    expect(whileAInFlight).toBe('read again');
    expect(idsOf(await page)).toEqual(commits ? [idA, idB] : [idB]);
  });

  it('waits for the writers in flight at its reading, not for those that began after', async () => {
    const marks = marksOn(marksSide);
    const a = await writer();
    const idA = await drawByTheService(a);
    const mark = marks.fresh();
    // The mark's reading found A in flight: it reads again rather than answer.
    const whileAInFlight = await answeredOrReadAgain(mark);
    // A later writer that holds its transaction open for good: the mark must not wait for it.
    const c = await writer();
    const idC = await drawByTheService(c);

    await a.commitTransaction();
    // Answered within a few polls of A's end, while C is still in flight.
    const answered = await Promise.race([mark, marksRead(20).then(() => 'still waiting')]);

    expect(whileAInFlight).toBe('read again');
    expect(answered).toMatchObject({ upToId: idA });
    expect(idC).toBeGreaterThan(idA);
  });

  it('runs one reading at a time: pages that ask while one runs share the next', async () => {
    const marks = marksOn(database.dataSource);
    const statements = jest.spyOn(database.dataSource, 'query');
    try {
      const first = marks.fresh();
      const second = marks.fresh();
      const third = marks.fresh();
      await Promise.all([first, second, third]);

      // The first may have read its mark before the others asked: they get one read after.
      expect(await second).toEqual(await third);
      expect(statements).toHaveBeenCalledTimes(2);
    } finally {
      statements.mockRestore();
    }
  });

  it('gives a mark at or above every create acknowledged before it was asked for', async () => {
    const marks = marksOn(database.dataSource);
    await marks.fresh();
    const created = await pets().add(aNewPet());

    expect((await marks.fresh()).upToId).toBeGreaterThanOrEqual(created.id);
  });
});

describe('A writer whose connection goes silent mid-transaction', () => {
  it('holds back pages until PostgreSQL ends it, never creates, and its id is never passed', async () => {
    const proxy = await startStallingProxy(database.url);
    const silentSide = await new DataSource({
      ...dataSourceOptions(proxy.url, database.schema),
      migrationsRun: false,
    }).initialize();
    const listPets = new ListPets(pets(), marksOn(marksSide));
    try {
      const before = await pets().add(aNewPet());
      await listPets.execute({ limit: 100 });
      const withoutStall = await createMs(20);
      const silent = silentSide.createQueryRunner();
      await silent.connect();
      await silent.startTransaction();
      const silentId = (await new TypeOrmPetRepository(silent.manager).add(aNewPet())).id;
      proxy.stall();
      const stalledAt = performance.now();

      // What is measured: a page that must read a new mark (the last one is below the pets created
      // since), and creates made while it waits for the silent writer.
      const acknowledged = await pets().add(aNewPet());
      const pageStarted = performance.now();
      const page = listPets.execute({ limit: 100 }).then((result) => ({ ids: idsOf(result), at: performance.now() }));
      expect(await answeredOrReadAgain(page)).toBe('read again');
      const whileAPageWaits = await createMs(20);
      const served = await page;
      const pageMs = served.at - pageStarted;

      console.log(
        `silent writer: a page waited ${pageMs.toFixed(0)} ms (${(served.at - stalledAt).toFixed(0)} ms after the stall); ` +
          `create median ${median(withoutStall).toFixed(1)} ms without a stall, ${median(whileAPageWaits).toFixed(1)} ms ` +
          `while the page waited (max ${Math.max(...withoutStall).toFixed(1)} / ${Math.max(...whileAPageWaits).toFixed(1)} ms)`,
      );
      // Creates are not held back: within noise of the same creates without a stall.
      expect(median(whileAPageWaits)).toBeLessThan(median(withoutStall) * 3 + 5);
      // The page waited for PostgreSQL to end the silent session (idle_in_transaction_session_timeout),
      // never past the mark's own limit, and serves every pet acknowledged before it, not the silent one.
      expect(served.at - stalledAt).toBeGreaterThanOrEqual(IDLE_IN_TRANSACTION_MS * 0.9);
      expect(pageMs).toBeLessThan(MARK_WAIT_LIMIT_MS);
      expect(served.ids).toEqual(expect.arrayContaining([before.id, acknowledged.id]));
      expect(served.ids).not.toContain(silentId);
    } finally {
      proxy.resume();
      await silentSide.destroy().catch(() => undefined);
      await proxy.close();
    }
  }, 30_000);
});

describe('What the readings rest on, changed as an operator would while the service runs', () => {
  it.each([
    ['disabled (ALTER TABLE pets DISABLE TRIGGER USER)', 'ALTER TABLE pets DISABLE TRIGGER USER', 'is disabled'],
    [
      'enabled for origin sessions only (a session_replication_role = replica session skips it)',
      'ALTER TABLE pets ENABLE TRIGGER pets_refuse_id',
      'does not fire ALWAYS',
    ],
  ])('a pets trigger %s: lists are refused, and served again once it fires ALWAYS', async (_, change, said) => {
    const marks = marksOn(database.dataSource);
    await pets().add(aNewPet());
    await marks.fresh();

    await database.dataSource.query(change);
    const refused = marks.fresh();
    await expect(refused).rejects.toBeInstanceOf(UnguardedStoreError);
    await expect(marks.fresh()).rejects.toThrow(said);
    const lastWhileRefused = marks.last();
    await database.dataSource.query(
      `ALTER TABLE pets ENABLE ALWAYS TRIGGER pets_note_id_floor, ENABLE ALWAYS TRIGGER pets_refuse_id`,
    );
    const again = await marks.fresh();

    expect(lastWhileRefused).toBeNull();
    expect(again.upToId).toBe(1);
  });

  it('a sequence set back behind the ids stored: lists and creates are refused with what to run', async () => {
    const marks = marksOn(database.dataSource);
    for (let i = 0; i < 5; i++) await pets().add(aNewPet());

    // Each refused try draws the next id: the tries end before the sequence is past the ids stored.
    await database.dataSource.query(`SELECT setval('pets_id_seq', 1)`);

    await expect(marks.fresh()).rejects.toThrow("run SELECT setval('pets_id_seq', (SELECT max(id) FROM pets))");
    await expect(pets().add(aNewPet())).rejects.toBeInstanceOf(UnguardedStoreError);
  });

  it("a sequence that caches ids: said once; the service's creates, keyed or not, retry a cached id and pages stay exact", async () => {
    const log: string[] = [];
    const listPets = new ListPets(pets(), marksOn(database.dataSource, log));
    const createPet = new CreatePet(pets(), petTransactionsOn(database.dataSource));
    await database.dataSource.query(`ALTER SEQUENCE pets_id_seq CACHE 50`);

    const created: number[] = [];
    for (let i = 0; i < 12; i++) {
      const keyed = i % 2 === 0 ? { caller: 'c', key: `k${i}` } : undefined;
      created.push((await createPet.execute({ name: `pet ${i}`, categoryId: 1 }, keyed)).pet.id);
      expect(idsOf(await listPets.execute({ limit: 100 }))).toEqual(created);
    }

    expect([...created].sort((a, b) => a - b)).toEqual(created);
    expect(log).toEqual([expect.stringContaining('caches 50 ids per session')]);
  });
});
