import { randomUUID } from 'node:crypto';
import { jest } from '@jest/globals';
import { Redis } from 'ioredis';
import { DataSource } from 'typeorm';
import { ListPets } from '../../../../src/application/pets/list-pets.js';
import {
  RedisReadingQueue,
  redisReadingQueueConnections,
} from '../../../../src/infrastructure/pets/redis-reading-queue.js';
import { SHARED_READING_OPTIONS, SharedReadings } from '../../../../src/infrastructure/pets/shared-readings.js';
import { SYSTEM_CLOCK } from '../../../../src/infrastructure/pets/clock.js';
import {
  MARK_OPTIONS,
  TypeOrmHighWaterMarkReading,
} from '../../../../src/infrastructure/pets/typeorm-high-water-mark-reading.js';
import { TypeOrmPetRepository } from '../../../../src/infrastructure/pets/typeorm-pet-repository.js';
import { SharedHighWaterMarks } from '../../../../src/infrastructure/pets/high-water-marks.js';
import { dataSourceOptions } from '../../../../src/infrastructure/schema/data-source-options.js';
import { openTestDatabase, type TestDatabase } from '../../../support/database.js';
import { findFreePort } from '../../../support/free-port.js';
import { aNewPet } from '../../../support/pets.js';
import { startRedis, type TestRedis } from '../../../support/redis-server.js';

// Three instances on one database share their high-water mark's readings through one Redis: each
// with a pool of its own (so that a test can count the readings each sends) and a reading queue in
// the database's namespace, composed as pets.module.ts composes them.
let database: TestDatabase;
let redis: TestRedis;
let raw: Redis;
let pools: DataSource[];
let namespace: string;
let instances: Instance[];

type Instance = {
  pool: DataSource;
  queue: RedisReadingQueue;
  shared: SharedReadings;
  marks: SharedHighWaterMarks;
  log: string[];
  readings: number;
};

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
  for (const { queue } of instances) queue.onModuleDestroy();
});
afterAll(async () => {
  await Promise.all(pools.map((pool) => pool.destroy()));
  raw?.disconnect();
  await redis?.stop();
  await database?.close();
});

/** An instance's marks on its pool, counting the readings it sends there. */
async function instanceOn(pool: DataSource, url = redis.url, { counted = true } = {}): Promise<Instance> {
  const log: string[] = [];
  const queue = new RedisReadingQueue(() => redisReadingQueueConnections(url, namespace));
  await queue.onModuleInit();
  const { marks, shared } = composed(pool, queue, (line) => log.push(line));
  const instance: Instance = { pool, queue, shared, marks, log, readings: 0 };
  if (!counted) return instance;
  const query = pool.query.bind(pool);
  jest.spyOn(pool, 'query').mockImplementation((...statement) => {
    instance.readings++;
    return query(...statement);
  });
  return instance;
}

/** The marks shared through `queue`, as pets.module.ts binds them. */
function composed(pool: DataSource, queue: RedisReadingQueue, log: (line: string) => void) {
  const reading = new TypeOrmHighWaterMarkReading(pool, log);
  const shared = new SharedReadings(queue, reading.read, SHARED_READING_OPTIONS, SYSTEM_CLOCK, log);
  const marks = new SharedHighWaterMarks(shared.read, MARK_OPTIONS);
  shared.onReading((heard) => marks.heard(heard));
  return { marks, shared };
}

/** Resolves once `count` requests wait on the queue for the next reading. */
async function requestsQueued(count: number): Promise<void> {
  while ((await raw.llen(`petstore:high-water:{${namespace}}:requests`)) < count) await new Promise(setImmediate);
}

async function create(): Promise<number> {
  return (await new TypeOrmPetRepository(database.dataSource.manager).add(aNewPet())).id;
}

describe('High-water marks shared by three instances through Redis', () => {
  it('answers the requests made while one instance reads with that instance’s next reading: the others send no statement', async () => {
    const [a, b, c] = instances as [Instance, Instance, Instance];
    // A's reading is held until B and C have requested.
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
    await requestsQueued(2);
    release();
    const [, markOfB, markOfC] = await Promise.all([fromA, fromB, fromC]);

    expect([markOfB.upToId, markOfC.upToId]).toEqual([acknowledged, acknowledged]);
    expect([a.readings, b.readings, c.readings]).toEqual([2, 0, 0]);
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
    const degraded = instances.map(({ shared }) => shared.degradation());
    redis.resume();
    // Each instance tries Redis again SHARED_READING_OPTIONS.retryMs after it failed, at its next reading.
    while (instances.some(({ shared }) => shared.degradation() !== null)) {
      await Promise.all(instances.map(({ marks }) => marks.fresh()));
      await new Promise((resolve) => setTimeout(resolve, SHARED_READING_OPTIONS.retryMs / 10));
    }

    expect(whilePaused.every((mark) => mark.upToId >= acknowledged)).toBe(true);
    expect(pausedMs).toBeLessThan(1000);
    expect(degraded).toEqual(Array(3).fill(expect.stringContaining('Redis does not answer')));
    for (const { log } of instances)
      expect(log).toEqual([expect.stringContaining('Redis failed'), expect.stringContaining('Redis answers again')]);
  });

  it('starts while Redis is down, each instance reading its own marks, and shares once Redis is up', async () => {
    const port = await findFreePort();
    const late = await Promise.all(
      pools.map((pool) => instanceOn(pool, `redis://127.0.0.1:${port}`, { counted: false })),
    );
    let lateRedis: TestRedis | null = null;
    try {
      const acknowledged = await create();
      const whileDown = await Promise.all(late.map(({ marks }) => marks.fresh()));
      const degraded = late.map(({ shared }) => shared.degradation());

      lateRedis = await startRedis(port);
      // The clients reconnect on their own; each tries Redis again at its first reading a second after it failed.
      while (late.some(({ shared }) => shared.degradation() !== null)) {
        await Promise.all(late.map(({ marks }) => marks.fresh()));
        await new Promise((resolve) => setTimeout(resolve, SHARED_READING_OPTIONS.retryMs / 10));
      }

      // Each queue's subscription came back on its own: a reading published reaches all three.
      const received = new Promise<unknown>((resolve) => late[0]!.queue.onPublished(resolve));
      const publisher = new Redis(lateRedis.url);
      const published = JSON.stringify({ requests: ['x/1'], reading: null });
      while ((await publisher.publish(`petstore:high-water:{${namespace}}:readings`, published)) < 3)
        await new Promise(setImmediate);
      publisher.disconnect();

      expect(whileDown.every((mark) => mark.upToId >= acknowledged)).toBe(true);
      expect(degraded).toEqual(Array(3).fill(expect.stringContaining('Redis does not answer')));
      expect(await received).toEqual({ requests: ['x/1'], reading: null });
    } finally {
      for (const { queue } of late) queue.onModuleDestroy();
      await lateRedis?.stop();
    }
  });
});
