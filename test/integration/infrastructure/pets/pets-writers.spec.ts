import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { QueryRunner } from 'typeorm';
import { PetRecord } from '../../../../src/infrastructure/pets/pet.record.js';
import { WRITERS_OF_PETS } from '../../../../src/infrastructure/pets/typeorm-high-water-mark-reading.js';
import { until } from '../../../support/cluster.js';
import { openTestDatabase, type TestDatabase } from '../../../support/database.js';

// Exact paging rests on two things every insert into pets does, whatever issues it (each session
// below is a connection of its own sending plain SQL, as a script or psql would): it holds the
// table's RowExclusiveLock from before its id is drawn to the end of its transaction, which
// PostgreSQL takes and nothing can skip; and its id is one its row's default just drew, above
// every id drawn or stored when its statement began, which the pets triggers check (migration
// PetsIdsAboveTheFloor). docs/internals.md, "Exact paging".
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
    await runner.query('RESET session_replication_role').catch(() => undefined);
    await runner.release();
  }
  await database.dataSource.query(
    `ALTER SEQUENCE pets_id_seq CACHE 1; ALTER TABLE pets ENABLE ALWAYS TRIGGER pets_note_id_floor, ENABLE ALWAYS TRIGGER pets_refuse_id`,
  );
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

/** Whether `pid` waits for the pets table's RowExclusiveLock. */
async function waitsToWrite(pid: number): Promise<boolean> {
  const [row] = await database.dataSource.query<{ n: number }[]>(
    `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'relation' AND relation = 'pets'::regclass
       AND mode = 'RowExclusiveLock' AND NOT granted AND pid = $1`,
    [pid],
  );
  return row?.n === 1;
}

/** Whether `pid` is among the writers of pets a high-water mark's reading lists (WRITERS_OF_PETS). */
async function listedAsWriter(pid: number): Promise<boolean> {
  const [row] = await database.dataSource.query<{ n: number }[]>(
    `SELECT count(*)::int AS n FROM pg_locks WHERE ${WRITERS_OF_PETS} AND pid = $1`,
    [pid],
  );
  return row?.n === 1;
}

type Insert = (runner: QueryRunner) => Promise<unknown>;

/**
 * Runs `insert` in a transaction while another session holds the table in SHARE mode, which keeps
 * every writer out, so the insert waits for its RowExclusiveLock; tells what the sequence had given
 * out by then, and when the insert is listed as a writer.
 */
async function drawnWhileTheTableIsLocked(insert: Insert) {
  const blocker = await session();
  await blocker.startTransaction();
  await blocker.query(`LOCK TABLE pets IN SHARE MODE`);
  const writer = await session();
  const pid = await pidOf(writer);
  await writer.startTransaction();
  const before = await lastDrawn();

  const inserting = insert(writer);
  await until(() => waitsToWrite(pid), 5000, 'the insert waits for the table lock');
  const whileWaiting = await lastDrawn();
  await blocker.commitTransaction();
  await inserting;
  const listedUntilCommit = await listedAsWriter(pid);
  await writer.commitTransaction();

  return { before, whileWaiting, after: await lastDrawn(), listedUntilCommit, listedAfter: await listedAsWriter(pid) };
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

describe('Every insert into pets holds the table lock from before its id is drawn to the end of its transaction', () => {
  it.each(FORMS)('%s', async (_form, insert) => {
    const drawn = await drawnWhileTheTableIsLocked(insert);

    expect(drawn.whileWaiting).toBe(drawn.before);
    expect(drawn.after).toBeGreaterThan(drawn.before);
    expect(drawn.listedUntilCommit).toBe(true);
    expect(drawn.listedAfter).toBe(false);
  });

  // No trigger takes it: an operator who disables the triggers, or a session with
  // session_replication_role = replica, changes nothing here.
  it('with every pets trigger disabled, and from a session with session_replication_role = replica', async () => {
    await database.dataSource.query(`ALTER TABLE pets DISABLE TRIGGER USER`);
    const asReplica: Insert = async (runner) => {
      await runner.query(`SET LOCAL session_replication_role = replica`);
      return insertValues(runner);
    };

    for (const insert of [insertValues, asReplica]) {
      const drawn = await drawnWhileTheTableIsLocked(insert);

      expect(drawn.whileWaiting).toBe(drawn.before);
      expect(drawn.listedUntilCommit).toBe(true);
    }
  });
});

describe("An id not drawn by its row's default, or not above every id drawn or stored before its statement, is refused", () => {
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

  it('an id drawn by nextval() before the insert began, given with OVERRIDING SYSTEM VALUE', async () => {
    const runner = await session();
    await runner.query(`SELECT nextval('pets_id_seq')`);

    await expect(
      runner.query(
        `INSERT INTO pets (id, name, category_id) OVERRIDING SYSTEM VALUE VALUES (currval('pets_id_seq'), 'Rex', 1)`,
      ),
    ).rejects.toMatchObject({ code: '40001' });
  });

  // Common advice for insert throughput; a cached block lets a session draw ids below a mark read
  // long after the block was fetched. The refusal discards the session's cache, so the retry that
  // 40001 asks for draws a fresh id.
  it("an id drawn from a session's sequence cache (CACHE 50), with 40001; the retry the code asks for draws a fresh one", async () => {
    await database.dataSource.query(`ALTER SEQUENCE pets_id_seq CACHE 50`);
    const cached = await session();
    const other = await session();
    await cached.query(`INSERT INTO pets (name, category_id) VALUES ('fetches the block', 1)`);
    await other.query(`INSERT INTO pets (name, category_id) VALUES ('fetches the next block', 1)`);

    const refused = cached.query(`INSERT INTO pets (name, category_id) VALUES ('from the cache', 1)`);
    await expect(refused).rejects.toMatchObject({ code: '40001' });
    await expect(refused).rejects.toThrow('it came from a sequence cache, or the sequence was set back');
    await cached.query(`INSERT INTO pets (name, category_id) VALUES ('retried', 1)`);

    const ids = await database.dataSource.query<{ id: string; name: string }[]>(
      `SELECT id, name FROM pets ORDER BY id`,
    );
    expect(ids.map((row) => row.name)).toEqual(['fetches the block', 'fetches the next block', 'retried']);
    expect(Number(ids[2]?.id)).toBeGreaterThan(Number(ids[1]?.id));
  });

  it('an id from a sequence set back behind the ids stored (RESTART), also from a session with session_replication_role = replica', async () => {
    const runner = await session();
    for (let i = 0; i < 3; i++) await runner.query(`INSERT INTO pets (name, category_id) VALUES ('Rex', 1)`);
    await database.dataSource.query(`DELETE FROM pets WHERE id = 2`);
    await database.dataSource.query(`ALTER SEQUENCE pets_id_seq RESTART WITH 2`);

    await expect(runner.query(`INSERT INTO pets (name, category_id) VALUES ('in a gap', 1)`)).rejects.toMatchObject({
      code: '40001',
    });
    await runner.query(`SET session_replication_role = replica`);
    await expect(runner.query(`INSERT INTO pets (name, category_id) VALUES ('in a gap', 1)`)).rejects.toMatchObject({
      code: '40001',
    });
    expect(await database.dataSource.query(`SELECT id FROM pets ORDER BY id`)).toEqual([{ id: '1' }, { id: '3' }]);
  });

  // The negative control: the triggers are what refuses a cached id.
  it('lets a cached id in once the pets triggers are disabled (negative control)', async () => {
    await database.dataSource.query(`ALTER SEQUENCE pets_id_seq CACHE 50`);
    const cached = await session();
    const other = await session();
    await cached.query(`INSERT INTO pets (name, category_id) VALUES ('fetches the block', 1)`);
    await other.query(`INSERT INTO pets (name, category_id) VALUES ('fetches the next block', 1)`);
    await database.dataSource.query(`ALTER TABLE pets DISABLE TRIGGER USER`);

    await cached.query(`INSERT INTO pets (name, category_id) VALUES ('from the cache', 1)`);

    const names = await database.dataSource.query<{ name: string }[]>(`SELECT name FROM pets ORDER BY id`);
    expect(names.map((row) => row.name)).toEqual(['fetches the block', 'from the cache', 'fetches the next block']);
  });
});
