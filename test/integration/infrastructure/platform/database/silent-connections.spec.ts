import pg from 'pg';
import {
  dropSilentConnections,
  WatchedClient,
} from '../../../../../src/infrastructure/platform/database/silent-connections.js';
import { openTestDatabase, type TestDatabase } from '../../../../support/database.js';
import { startTcpProxy, type TcpProxy } from '../../../../support/tcp-proxy.js';

// Long enough that a busy CI machine stalling the test's event loop is not taken for silence.
const SILENCE_MS = 1_000;

let database: TestDatabase;
let proxy: TcpProxy;
let pool: pg.Pool;
let dropped: number[];

beforeAll(async () => {
  database = await openTestDatabase();
});
afterAll(async () => {
  await database.close();
});
beforeEach(async () => {
  proxy = await startTcpProxy(database.url);
  pool = new pg.Pool({ connectionString: proxy.url, max: 5, Client: WatchedClient });
  pool.on('error', () => undefined);
  dropped = [];
  dropSilentConnections(pool, SILENCE_MS, (count) => dropped.push(count));
});
afterEach(async () => {
  await pool.end().catch(() => undefined);
  await proxy.close();
});

/** Three connections opened and back in the pool, idle. */
async function threeIdleConnections(): Promise<void> {
  await Promise.all([1, 2, 3].map(() => pool.query('SELECT pg_sleep(0.05)')));
  expect(pool.idleCount).toBe(3);
}

describe('dropSilentConnections', () => {
  it('fails a query on a silent connection after the silence, and drops the idle connections with it', async () => {
    await threeIdleConnections();
    proxy.silence();

    const started = performance.now();
    await expect(pool.query('SELECT 1')).rejects.toThrow();
    const waited = performance.now() - started;

    expect(waited).toBeGreaterThanOrEqual(SILENCE_MS - 50);
    expect(waited).toBeLessThan(SILENCE_MS + 1000);
    expect(dropped).toEqual([3]);
    await expect(pool.query('SELECT 1 AS one')).resolves.toMatchObject({ rows: [{ one: 1 }] });
  });

  it('leaves alone connections that answer within the silence, and connections idle for longer', async () => {
    await threeIdleConnections();

    await new Promise((resolve) => setTimeout(resolve, SILENCE_MS * 2));
    await Promise.all([1, 2, 3].map(() => pool.query(`SELECT pg_sleep(${SILENCE_MS / 2000})`)));

    expect(dropped).toEqual([]);
    expect(pool.totalCount).toBe(3);
  });
});
