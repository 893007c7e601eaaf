import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { QueryRunner } from 'typeorm';
import { PetRecord } from '../../../../src/infrastructure/pets/pet.record.js';
import { ON_PETS_LOCK, PETS_LOCK } from '../../../../src/infrastructure/pets/typeorm-pet-repository.js';
import { PetsIdsDrawnUnderLock1795737600000 } from '../../../../src/infrastructure/schema/migrations/1795737600000-pets-ids-drawn-under-lock.js';
import { until } from '../../../support/cluster.js';
import { openTestDatabase, type TestDatabase } from '../../../support/database.js';

// Exact paging needs every id of `pets` drawn under the pets lock (docs/internals.md, "Exact
// paging"); the table's trigger takes it for any insert, whatever issues it. Each session below is
// a connection of its own sending plain SQL, as a script or psql would.
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
  for (const runner of open.splice(0)) {
    if (runner.isTransactionActive) await runner.rollbackTransaction();
    await runner.release();
  }
});

async function session(): Promise<QueryRunner> {
  const runner = database.dataSource.createQueryRunner();
  open.push(runner);
  await runner.connect();
  return runner;
}

async function pidOf(runner: QueryRunner): Promise<number> {
  const [row] = await database.dataSource.query<{ pid: number }[]>('SELECT pg_backend_pid() AS pid', [], runner);
  if (row === undefined) throw new Error('no backend pid');
  return row.pid;
}

/** The highest id the sequence has given out, to anyone: it moves as soon as nextval runs. */
async function lastDrawn(): Promise<number> {
  const [row] = await database.dataSource.query<{ drawn: number }[]>(
    `SELECT coalesce(pg_sequence_last_value('pets_id_seq'), 0)::int AS drawn`,
  );
  return row?.drawn ?? Number.NaN;
}

/** Whether `pid` holds the pets lock shared (granted) or waits for it, as the settled mark reads pg_locks. */
async function onPetsLock(pid: number, granted: boolean): Promise<boolean> {
  const [row] = await database.dataSource.query<{ n: number }[]>(
    `SELECT count(*)::int AS n FROM pg_locks WHERE ${ON_PETS_LOCK} AND mode = 'ShareLock' AND pid = $1 AND granted = $2`,
    [pid, granted],
  );
  return row?.n === 1;
}

type Insert = (runner: QueryRunner) => Promise<unknown>;

/**
 * Runs `insert` in a transaction while another session holds the pets lock exclusive, so the insert
 * waits at the lock; tells what the sequence had given out by then, and when the lock is held.
 */
async function drawnWhileTheLockIsTaken(insert: Insert) {
  const blocker = await session();
  await blocker.startTransaction();
  await blocker.query(`SELECT pg_advisory_xact_lock(${PETS_LOCK})`);
  const writer = await session();
  const pid = await pidOf(writer);
  await writer.startTransaction();
  const before = await lastDrawn();

  const inserting = insert(writer);
  await until(() => onPetsLock(pid, false), 5000, 'the insert waits for the pets lock');
  const whileWaiting = await lastDrawn();
  await blocker.commitTransaction();
  await inserting;
  const heldUntilCommit = await onPetsLock(pid, true);
  await writer.commitTransaction();

  return { before, whileWaiting, after: await lastDrawn(), heldUntilCommit, heldAfter: await onPetsLock(pid, true) };
}

const insertValues: Insert = (runner) => runner.query(`INSERT INTO pets (name, category_id) VALUES ('Rex', 1)`);

const FORMS: [string, Insert][] = [
  ['INSERT ... VALUES', insertValues],
  [
    'INSERT ... VALUES of several rows',
    (runner) => runner.query(`INSERT INTO pets (name, category_id) VALUES ('Rex', 1), ('Tom', 2), ('Kit', 3)`),
  ],
  [
    'INSERT ... SELECT',
    (runner) =>
      runner.query(`INSERT INTO pets (name, category_id) SELECT 'pet ' || n, n FROM generate_series(1, 3) AS n`),
  ],
  [
    'INSERT in a WITH query',
    (runner) =>
      runner.query(`WITH created AS (INSERT INTO pets (name, category_id) VALUES ('Rex', 1) RETURNING id)
        SELECT id FROM created`),
  ],
  [
    'MERGE ... WHEN NOT MATCHED THEN INSERT',
    (runner) =>
      runner.query(`MERGE INTO pets USING (VALUES ('Rex', 1)) AS new (name, category_id) ON false
        WHEN NOT MATCHED THEN INSERT (name, category_id) VALUES (new.name, new.category_id)`),
  ],
  ['COPY ... FROM STDIN', (runner) => copyIn(runner, 'COPY pets (name, category_id) FROM STDIN', 'Rex\t1\nTom\t2\n')],
  [
    "TypeORM's save() of a PetRecord",
    (runner) => runner.manager.save(PetRecord, { name: 'Rex', categoryId: '1', status: 'available' }),
  ],
];

async function copyIn(runner: QueryRunner, statement: string, rows: string): Promise<void> {
  const client: unknown = await runner.connect();
  if (!(client instanceof pg.Client)) throw new Error('the session has no pg client');
  await pipeline(Readable.from([rows]), client.query(copyFrom(statement)));
}

describe('Every insert into pets takes the pets lock shared before its id is drawn, to the end of its transaction', () => {
  it.each(FORMS)('%s', async (_form, insert) => {
    const drawn = await drawnWhileTheLockIsTaken(insert);

    expect(drawn.whileWaiting).toBe(drawn.before);
    expect(drawn.after).toBeGreaterThan(drawn.before);
    expect(drawn.heldUntilCommit).toBe(true);
    expect(drawn.heldAfter).toBe(false);
  });

  // The negative control: PostgreSQL evaluates a row's defaults, nextval among them, before the
  // row's BEFORE ROW triggers, so a row trigger would take the lock after the id is drawn.
  it('a row trigger would take it too late: the id is drawn while the insert waits (negative control)', async () => {
    const migration = new PetsIdsDrawnUnderLock1795737600000();
    const schema = await session();
    await migration.down(schema);
    try {
      await schema.query(`
        CREATE FUNCTION pets_take_lock_per_row() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          PERFORM pg_advisory_xact_lock_shared(TG_RELID::bigint);
          RETURN NEW;
        END $$`);
      await schema.query(
        `CREATE TRIGGER pets_take_lock_per_row BEFORE INSERT ON pets FOR EACH ROW EXECUTE FUNCTION pets_take_lock_per_row()`,
      );

      const drawn = await drawnWhileTheLockIsTaken(insertValues);

      expect(drawn.whileWaiting).toBeGreaterThan(drawn.before);
    } finally {
      await schema.query(`DROP TRIGGER IF EXISTS pets_take_lock_per_row ON pets`);
      await schema.query(`DROP FUNCTION IF EXISTS pets_take_lock_per_row()`);
      await migration.up(schema);
    }
  });
});

describe('An id the insert did not draw is refused', () => {
  const GIVEN_ID = `INSERT INTO pets (id, name, category_id) OVERRIDING SYSTEM VALUE VALUES (5, 'Rex', 1)`;

  it("OVERRIDING SYSTEM VALUE, with the trigger's message once the session has drawn an id", async () => {
    const runner = await session();
    await runner.query(`INSERT INTO pets (name, category_id) VALUES ('Rex', 1)`);

    await expect(runner.query(GIVEN_ID)).rejects.toThrow('cannot insert id 5 into pets: ids are drawn by the database');
  });

  it("OVERRIDING SYSTEM VALUE, with currval's message on a session that has drawn none", async () => {
    const runner = await session();
    await runner.query('DISCARD SEQUENCES');

    await expect(runner.query(GIVEN_ID)).rejects.toThrow(/currval of sequence "pets_id_seq" is not yet defined/);
  });

  it('COPY of an id column', async () => {
    const runner = await session();
    await runner.query(`INSERT INTO pets (name, category_id) VALUES ('Rex', 1)`);

    await expect(copyIn(runner, 'COPY pets (id, name, category_id) FROM STDIN', '7\tTom\t2\n')).rejects.toThrow(
      'cannot insert id 7 into pets',
    );
    expect(await database.dataSource.query(`SELECT id FROM pets ORDER BY id`)).toEqual([{ id: '1' }]);
  });
});
