import { randomUUID } from 'node:crypto';
import { jest } from '@jest/globals';
import { Redis } from 'ioredis';
import { DataSource } from 'typeorm';
import { ListPets } from '../../../../src/application/pets/list-pets.js';
import { openRedisLookBoard, RedisLookBoard } from '../../../../src/infrastructure/pets/redis-look-board.js';
import { SHARED_LOOK_OPTIONS } from '../../../../src/infrastructure/pets/shared-looks.js';
import { TypeOrmPetRepository } from '../../../../src/infrastructure/pets/typeorm-pet-repository.js';
import { TypeOrmSettledMarks } from '../../../../src/infrastructure/pets/typeorm-settled-marks.js';
import { connectRedis } from '../../../../src/infrastructure/platform/rate-limits/flexible-rate-limits.js';
import { dataSourceOptions } from '../../../../src/infrastructure/schema/data-source-options.js';
import { openTestDatabase, type TestDatabase } from '../../../support/database.js';
import { findFreePort } from '../../../support/free-port.js';
import { aNewPet } from '../../../support/pets.js';
import { startRedis, type TestRedis } from '../../../support/redis-server.js';

// Three instances on one database share their marks' looks through one Redis: each with a pool of
// its own (so that a test can count the looks each sends) and a look board in the database's
// namespace.
let database: TestDatabase;
let redis: TestRedis;
let raw: Redis;
let pools: DataSource[];
let namespace: string;
let instances: Instance[];

type Instance = { pool: DataSource; board: RedisLookBoard; marks: TypeOrmSettledMarks; log: string[]; looks: number };

beforeAll(async () => {
  database = await openTestDatabase();
  redis = await startRedis();
  raw = new Redis(redis.url);
  pools = await Promise.all(
    [1, 2, 3].map(() =>
      new DataSource({ ...dataSourceOptions(database.url, database.schema), migrationsRun: false }).initialize(),
    ),
  );
});
beforeEach(async () => {
  await database.reset();
  namespace = randomUUID();
  instances = await Promise.all(pools.map((pool) => instanceOn(pool)));
});
afterEach(() => {
  jest.restoreAllMocks();
  redis.resume();
  for (const { board } of instances) board.close();
});
afterAll(async () => {
  await Promise.all(pools.map((pool) => pool.destroy()));
  raw?.disconnect();
  await redis?.stop();
  await database?.close();
});

/** An instance's marks on its pool, counting the looks it sends there. */
async function instanceOn(pool: DataSource): Promise<Instance> {
  const board = await new RedisLookBoard(await connectRedis(redis.url), new Redis(redis.url), namespace).open();
  const log: string[] = [];
  const instance: Instance = {
    pool,
    board,
    marks: new TypeOrmSettledMarks(pool, { board, log: (line) => log.push(line) }),
    log,
    looks: 0,
  };
  const query = pool.query.bind(pool);
  jest.spyOn(pool, 'query').mockImplementation((...statement) => {
    instance.looks++;
    return query(...statement);
  });
  return instance;
}

/** Resolves once `count` asks wait on the board for the next look. */
async function asksOnTheBoard(count: number): Promise<void> {
  while ((await raw.llen(`petstore:marks:{${namespace}}:asks`)) < count) await new Promise(setImmediate);
}

async function create(): Promise<number> {
  return (await new TypeOrmPetRepository(database.dataSource.manager).add(aNewPet())).id;
}

describe('Settled marks shared by three instances through Redis', () => {
  it('answers the asks made while one instance looks with that instance’s next look: the others send no statement', async () => {
    const [a, b, c] = instances as [Instance, Instance, Instance];
    // A's look is held until B and C have asked.
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const query = a.pool.query.bind(a.pool);
    jest.spyOn(a.pool, 'query').mockImplementationOnce(async (...statement) => {
      await held;
      return query(...statement);
    });
    const fromA = a.marks.fresh();
    const acknowledged = await create();

    const fromB = b.marks.fresh();
    const fromC = c.marks.fresh();
    await asksOnTheBoard(2);
    release();
    const [, markOfB, markOfC] = await Promise.all([fromA, fromB, fromC]);

    expect([markOfB.upToId, markOfC.upToId]).toEqual([acknowledged, acknowledged]);
    expect([a.looks, b.looks, c.looks]).toEqual([2, 0, 0]);
  });

  it('lists, on each instance, every pet acknowledged before the list began (four clients at once)', async () => {
    const lists = instances.map(
      ({ marks }) => new ListPets(new TypeOrmPetRepository(database.dataSource.manager), marks),
    );
    const missed: string[] = [];

    await Promise.all(
      [0, 1, 2, 3].map(async (client) => {
        for (let i = 0; i < 15; i++) {
          const id = await create();
          for (const [on, listPets] of lists.entries()) {
            const page = await listPets.execute({ limit: 100, afterId: Math.max(0, id - 50) });
            if (!page.pets.some((pet) => pet.id === id))
              missed.push(`pet ${id} (client ${client}) not listed on ${on}`);
          }
        }
      }),
    );

    expect(missed).toEqual([]);
  });

  it('reads each instance’s marks itself, within the bound, while Redis is paused; says so once; shares again when it answers', async () => {
    await Promise.all(instances.map(({ marks }) => marks.fresh()));
    redis.pause();
    const acknowledged = await create();

    const started = performance.now();
    const whilePaused = await Promise.all(instances.map(({ marks }) => marks.fresh()));
    const pausedMs = performance.now() - started;
    const degraded = instances.map(({ marks }) => marks.degradation());
    redis.resume();
    // Each instance tries Redis again SHARED_LOOK_OPTIONS.retryMs after it failed, at its next look.
    while (instances.some(({ marks }) => marks.degradation() !== null)) {
      await Promise.all(instances.map(({ marks }) => marks.fresh()));
      await new Promise((resolve) => setTimeout(resolve, SHARED_LOOK_OPTIONS.retryMs / 10));
    }

    expect(whilePaused.every((mark) => mark.upToId >= acknowledged)).toBe(true);
    expect(pausedMs).toBeLessThan(1000);
    expect(degraded).toEqual(Array(3).fill(expect.stringContaining('Redis does not answer')));
    for (const { log } of instances)
      expect(log).toEqual([expect.stringContaining('Redis failed'), expect.stringContaining('Redis answers again')]);
  });

  it('starts while Redis is down, each instance reading its own marks, and shares once Redis is up', async () => {
    const port = await findFreePort();
    const boards = await Promise.all(
      pools.map(() => openRedisLookBoard(`redis://127.0.0.1:${port}`, namespace, () => undefined)),
    );
    const late = boards.map((board, i) => new TypeOrmSettledMarks(pools[i]!, { board }));
    let lateRedis: TestRedis | null = null;
    try {
      const acknowledged = await create();
      const whileDown = await Promise.all(late.map((marks) => marks.fresh()));
      const degraded = late.map((marks) => marks.degradation());

      lateRedis = await startRedis(port);
      // The clients reconnect on their own; each tries Redis again at its first look a second after it failed.
      while (late.some((marks) => marks.degradation() !== null)) {
        await Promise.all(late.map((marks) => marks.fresh()));
        await new Promise((resolve) => setTimeout(resolve, SHARED_LOOK_OPTIONS.retryMs / 10));
      }

      // Each board's subscription came back on its own: an answer published reaches all three.
      const received = new Promise<unknown>((resolve) => boards[0]!.onAnswer(resolve));
      const publisher = new Redis(lateRedis.url);
      const answer = JSON.stringify({ asks: ['x/1'], snapshot: null });
      while ((await publisher.publish(`petstore:marks:{${namespace}}:answers`, answer)) < 3)
        await new Promise(setImmediate);
      publisher.disconnect();

      expect(whileDown.every((mark) => mark.upToId >= acknowledged)).toBe(true);
      expect(degraded).toEqual(Array(3).fill(expect.stringContaining('Redis does not answer')));
      expect(await received).toEqual({ asks: ['x/1'], snapshot: null });
    } finally {
      for (const board of boards) board.close();
      await lateRedis?.stop();
    }
  });
});
