import { jest } from '@jest/globals';
import pg from 'pg';
import type { DataSourceOptions } from 'typeorm';
import { openDataSource, postgresOptions } from '../../../../../src/infrastructure/platform/database/database.js';
import { WatchedClient } from '../../../../../src/infrastructure/platform/database/silent-connections.js';
import {
  poolOf,
  TypeOrmDatabasePool,
} from '../../../../../src/infrastructure/platform/database/typeorm-database-pool.js';
import { openTestDatabase, type TestDatabase } from '../../../../support/database.js';

// What the service relies on in TypeORM and pg beyond their documented calls (docs/internals.md):
// these fail when an upgrade changes it.

let database: TestDatabase;

beforeAll(async () => {
  database = await openTestDatabase();
});
afterAll(async () => {
  await database.close();
});

describe('the pool behind TypeORM', () => {
  it('is read from PostgresDriver.master: usage counts the connections TypeORM opened and lends', async () => {
    const pool = new TypeOrmDatabasePool(database.dataSource);
    const before = pool.usage();
    const runner = database.dataSource.createQueryRunner();
    await runner.connect();

    const lent = pool.usage();
    await runner.release();

    expect(before.total).toBeGreaterThanOrEqual(1);
    expect(before).toEqual({ total: before.total, idle: before.total, waiting: 0 });
    expect(lent).toEqual({ total: before.total, idle: before.total - 1, waiting: 0 });
  });

  it('lends WatchedClients that talk over the socket handed to pg (its Client `stream` and pool `Client` options)', async () => {
    const pool = poolOf(database.dataSource);
    if (pool === null) throw new Error('no pg pool behind the data source');
    const client = await pool.connect();
    // A lent client whose socket ends reports it as an error event besides failing the query.
    client.on('error', () => undefined);
    try {
      if (!(client instanceof WatchedClient)) throw new Error('the pool lent a client that is not a WatchedClient');

      expect(client.socket.remotePort).toBe(Number(new URL(database.url).port || 5432));
      client.socket.destroy();
      await expect(client.query('SELECT 1')).rejects.toThrow();
    } finally {
      client.release(true);
    }
  });

  it("keeps the connections it opened through a quiet spell, where pg's default closes them after 10 s", async () => {
    const options = postgresOptions(database.url, {});
    const extra = options.extra as pg.PoolConfig;

    expect(await connectionsAfterQuietMinute(options)).toBe(extra.max);
    // The control: without the service's setting, the same minute leaves none.
    expect(await connectionsAfterQuietMinute({ ...options, extra: { ...extra, min: undefined } })).toBe(0);
  });
});

/**
 * Opens a data source as the service does, lends every connection of its pool at once, lets them
 * all sit idle for a minute (on a fake clock), and counts what the pool still holds.
 */
async function connectionsAfterQuietMinute(options: DataSourceOptions): Promise<number> {
  const dataSource = await openDataSource(options);
  try {
    const pool = poolOf(dataSource);
    if (pool === null) throw new Error('no pg pool behind the data source');
    const clients = await Promise.all(Array.from({ length: pool.options.max }, () => pool.connect()));
    // pg starts a connection's idle timer when it is given back: only timers are faked, so the
    // sockets still talk.
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask', 'hrtime', 'performance', 'Date'] });
    try {
      for (const client of clients) client.release();
      await jest.advanceTimersByTimeAsync(60_000);
      return pool.totalCount;
    } finally {
      jest.useRealTimers();
    }
  } finally {
    await dataSource.destroy();
  }
}
