import { dataSourceOptions } from '../../../../src/infrastructure/schema/data-source-options.js';
import type { DataSource } from 'typeorm';
import { jest } from '@jest/globals';
import type { Config } from '@jest/types';
import { ScheduleModule, SchedulerRegistry } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { ReplicaRoutingPetRepository } from '../../../../src/infrastructure/pets/replica-pet-repository.js';
import { StaleMarkError } from '../../../../src/domain/pets/pet-repository.js';
import { TypeOrmPetRepository } from '../../../../src/infrastructure/pets/typeorm-pet-repository.js';
import { WalHighWaterMark } from '../../../../src/infrastructure/pets/high-water-marks.js';
import { TypeOrmReplicaPetRepository } from '../../../../src/infrastructure/pets/replica-pet-repository.js';
import {
  PRIMARY_TIMELINE,
  REPLICA_CHECK_MS,
  REPLICA_READ_DEADLINE_MS,
  TypeOrmReplicas,
} from '../../../../src/infrastructure/platform/database/typeorm-replicas.js';
import { openTestDatabase, type TestDatabase } from '../../../support/database.js';
import { aNewPet } from '../../../support/pets.js';
import { startStallingProxy, type StallingProxy } from '../../../support/stalling-proxy.js';

// The replica here is the test database itself seen through a proxy that can go silent: what is
// tested is the routing over real pools and real timeouts. Lag and replay on a real streaming
// replica are measured by the cluster tests (test/cluster).

let database: TestDatabase;
let proxy: StallingProxy;
let replicas: TypeOrmReplicas;
let primary: TypeOrmPetRepository;
let pets: ReplicaRoutingPetRepository<DataSource>;

beforeAll(async () => {
  database = await openTestDatabase();
  proxy = await startStallingProxy(database.url);
  replicas = new TypeOrmReplicas(database.dataSource, [proxy.url], {
    maxLagSeconds: 2,
    optionsFor: (url, waits) => dataSourceOptions(url, database.schema, waits),
  });
  primary = new TypeOrmPetRepository(database.dataSource.manager);
  pets = new ReplicaRoutingPetRepository(primary, replicas.set, (replica) => new TypeOrmReplicaPetRepository(replica));
});
afterEach(() => jest.restoreAllMocks());
afterAll(async () => {
  proxy.resume();
  await replicas?.onApplicationShutdown();
  await proxy?.close();
  await database?.close();
});

async function timed<T>(work: Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work;
  return { value, ms: performance.now() - started };
}

describe('TypeOrmReplicas with ReplicaRoutingPetRepository', () => {
  it('reads from the replica once a check found it answering; creates go to the primary', async () => {
    const created = await pets.add(aNewPet({ name: 'Rex' }));
    await replicas.set.check();
    const before = proxy.bytesFromServer();

    expect(await pets.findById(created.id)).toEqual(created);
    expect((await pets.list({ limit: 10 })).map((pet) => pet.id)).toContain(created.id);
    expect(proxy.bytesFromServer()).toBeGreaterThan(before);
    expect(replicas.set.status()).toEqual([expect.objectContaining({ usable: true })]);
  });

  it('a replica that stops answering costs a read at most 1 s, then reads go to the primary until a check sees it back', async () => {
    const created = await pets.add(aNewPet({ name: 'Rex' }));
    await replicas.set.check();
    proxy.stall();

    const first = await timed(pets.findById(created.id));
    const second = await timed(pets.list({ limit: 10 }));
    await replicas.set.check();

    expect(first.value).toEqual(created);
    expect(first.ms).toBeLessThan(1000);
    expect(second.value.map((pet) => pet.id)).toContain(created.id);
    // Not sent to the stalled replica: it waits out no read deadline.
    expect(second.ms).toBeLessThan(REPLICA_READ_DEADLINE_MS);
    expect(replicas.set.status()).toEqual([expect.objectContaining({ usable: false })]);

    proxy.resume();
    await replicas.set.check();
    expect(replicas.set.status()).toEqual([expect.objectContaining({ usable: true })]);
    const before = proxy.bytesFromServer();
    expect(await pets.findById(created.id)).toEqual(created);
    expect(proxy.bytesFromServer()).toBeGreaterThan(before);
  });

  // The test database is no standby: the position it has reached is the WAL it has written.
  it('a page under a mark is read on the replica when the server its connection reaches has the mark position, and on the primary when it does not', async () => {
    const created = await pets.add(aNewPet({ name: 'Rex' }));
    await replicas.set.check();
    const [row] = await database.dataSource.query<{ position: string; timeline: number }[]>(
      `SELECT pg_current_wal_insert_lsn()::text AS position, ${PRIMARY_TIMELINE} AS timeline`,
    );
    const reached = new WalHighWaterMark(created.id, row?.position ?? '', row?.timeline ?? 0);
    const ahead = new WalHighWaterMark(created.id, 'FFFFFFFF/FFFFFFFF', row?.timeline ?? 0);
    const onPrimary = jest.spyOn(primary, 'list');
    const before = proxy.bytesFromServer();

    const fromReplica = await pets.list({ limit: 100, upTo: reached });
    const afterReplica = proxy.bytesFromServer();
    const fromPrimary = await pets.list({ limit: 100, upTo: ahead });

    expect(fromReplica.map((pet) => pet.id)).toContain(created.id);
    expect(afterReplica).toBeGreaterThan(before);
    expect(onPrimary).toHaveBeenCalledTimes(1);
    expect(onPrimary).toHaveBeenCalledWith({ limit: 100, upTo: ahead });
    expect(fromPrimary).toEqual(fromReplica);
    // Not taken out: it was behind, not failing.
    expect(replicas.set.status()).toEqual([expect.objectContaining({ usable: true })]);
  });

  it('a page under a mark of another timeline (read before a failover or a restore) is served by neither: the primary calls it stale', async () => {
    const created = await pets.add(aNewPet({ name: 'Rex' }));
    await replicas.set.check();
    const [row] = await database.dataSource.query<{ position: string; timeline: number }[]>(
      `SELECT pg_current_wal_insert_lsn()::text AS position, ${PRIMARY_TIMELINE} AS timeline`,
    );
    const before = new WalHighWaterMark(created.id, row?.position ?? '', (row?.timeline ?? 0) - 1);

    await expect(pets.list({ limit: 100, upTo: before })).rejects.toBeInstanceOf(StaleMarkError);
    // An empty page too: under a fresh mark it would be the last page, served as complete.
    await expect(pets.list({ limit: 100, afterId: created.id, upTo: before })).rejects.toBeInstanceOf(StaleMarkError);
    const current = new WalHighWaterMark(created.id, row?.position ?? '', row?.timeline ?? 0);
    expect(await pets.list({ limit: 100, afterId: created.id, upTo: current })).toEqual([]);
    expect(replicas.set.status()).toEqual([expect.objectContaining({ usable: true })]);
  });

  // HAProxy cuts its sessions to a replica its check takes out (a replica promoted in a failover),
  // while the reader port still reaches the other replicas: taking the port out of reads would send
  // reads to a primary that may be missing.
  it('a read whose replica connection is cut is tried once more on a new connection; the replica stays in', async () => {
    const created = await pets.add(aNewPet({ name: 'Rex' }));
    await replicas.set.check();
    // Several pooled connections, all cut below: the retry must not be lent one of them.
    await Promise.all([1, 2, 3].map(() => pets.findById(created.id)));
    const sent = proxy.bytesFromClient();
    proxy.holdAnswers();

    const reading = pets.findById(created.id);
    await until(() => proxy.bytesFromClient() > sent);
    const answered = proxy.bytesFromServer();
    proxy.cutConnections();

    expect(await reading).toEqual(created);
    // Answered through the replica's port, on a new connection, not by the primary.
    expect(proxy.bytesFromServer()).toBeGreaterThan(answered);
    expect(replicas.set.status()).toEqual([expect.objectContaining({ usable: true })]);
  });

  it('a replica that fails the second try too is taken out, and the read goes to the primary', async () => {
    const created = await pets.add(aNewPet({ name: 'Rex' }));
    await replicas.set.check();
    await pets.findById(created.id);
    proxy.refuse();

    try {
      const sent = proxy.bytesFromClient();
      proxy.holdAnswers();
      const reading = pets.findById(created.id);
      await until(() => proxy.bytesFromClient() > sent);
      proxy.cutConnections();
      const refusedBefore = proxy.refused();

      expect(await reading).toEqual(created);
      // The second try was made, on a new connection, and refused.
      expect(proxy.refused()).toBe(refusedBefore + 1);
      expect(replicas.set.status()).toEqual([expect.objectContaining({ usable: false })]);
    } finally {
      proxy.accept();
    }
  });
});

/** Polls the event loop (no clock) until `condition` holds. */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setImmediate(resolve));
}

describe("TypeOrmReplicas' checks on @nestjs/schedule's interval", () => {
  // Only the intervals are faked: the pools, the proxy and the checks' deadlines run as they do.
  const intervalsOnly: Config.FakeTimersConfig = {
    doNotFake: [
      'setTimeout',
      'clearTimeout',
      'setImmediate',
      'nextTick',
      'queueMicrotask',
      'Date',
      'performance',
      'hrtime',
    ],
  };
  const until = async (done: () => boolean): Promise<void> => {
    while (!done()) await new Promise((resolve) => setTimeout(resolve, 10));
  };

  it("checks at start and on @nestjs/schedule's interval in an app, and no more once the app has closed", async () => {
    jest.useFakeTimers(intervalsOnly);
    let scheduled: TypeOrmReplicas | null = null;
    const usable = () => scheduled?.set.status()[0]?.usable;
    const app = await Test.createTestingModule({
      imports: [ScheduleModule.forRoot()],
      providers: [
        {
          provide: TypeOrmReplicas,
          inject: [SchedulerRegistry],
          useFactory: (scheduler: SchedulerRegistry) =>
            (scheduled = new TypeOrmReplicas(database.dataSource, [proxy.url], {
              maxLagSeconds: 2,
              optionsFor: (url, waits) => dataSourceOptions(url, database.schema, waits),
              scheduler,
            })),
        },
      ],
    }).compile();
    // Built, and nothing checked yet: the checks start once the app is up.
    expect(scheduled).not.toBeNull();
    expect(jest.getTimerCount()).toBe(0);
    let open = true;
    try {
      await app.init();
      await until(() => usable() === true);

      proxy.stall();
      jest.advanceTimersByTime(REPLICA_CHECK_MS);
      await until(() => usable() === false);
      proxy.resume();

      await app.close();
      open = false;
      expect(jest.getTimerCount()).toBe(0);
      jest.advanceTimersByTime(10 * REPLICA_CHECK_MS);
      expect(usable()).toBe(false);
    } finally {
      proxy.resume();
      if (open) await app.close();
      jest.useRealTimers();
    }
  });

  it('schedules nothing without replicas', () => {
    const scheduler = new SchedulerRegistry();
    const none = new TypeOrmReplicas(database.dataSource, [], {
      maxLagSeconds: 2,
      optionsFor: (url, waits) => dataSourceOptions(url, database.schema, waits),
      scheduler,
    });

    none.onApplicationBootstrap();

    expect(scheduler.getIntervals()).toEqual([]);
  });
});
