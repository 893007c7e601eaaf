import { removeEmbeddedPostgres } from '../support/embedded-postgres.js';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../../src/infrastructure/schema/data-source-options.js';
import {
  type EmbeddedDatabase,
  startEmbeddedPostgres,
} from '../../src/infrastructure/platform/database/embedded-postgres.js';
import { authorized, freePort, startServer, type TestServer } from '../support/server.js';

// A PostgreSQL this test owns (the embedded one, whatever DATABASE_URL says), so it can stop it
// and start it again on the same port, as an outage would.
let dataDir: string;
let port: number;
let postgres: EmbeddedDatabase;
let dataSource: DataSource;
let server: TestServer;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'petstore-outage-'));
  port = await freePort();
  postgres = await startEmbeddedPostgres(dataDir, { port });
  dataSource = new DataSource(dataSourceOptions(postgres.url));
  await dataSource.initialize();
  await dataSource.runMigrations();
  server = await startServer({ url: postgres.url });
});
afterAll(async () => {
  await server?.close();
  await dataSource?.destroy().catch(() => undefined);
  await postgres?.stop();
  await removeEmbeddedPostgres(dataDir);
});

/** Polls `path` until it answers `status`; returns the milliseconds it took and the slowest answer. */
async function until(
  pathname: string,
  status: number,
  headers: Record<string, string> = {},
): Promise<{ ms: number; slowestMs: number }> {
  const started = Date.now();
  let slowestMs = 0;
  for (;;) {
    const sent = Date.now();
    const response = await fetch(`${server.url}${pathname}`, { headers, signal: AbortSignal.timeout(15_000) });
    await response.arrayBuffer();
    slowestMs = Math.max(slowestMs, Date.now() - sent);
    if (response.status === status) return { ms: Date.now() - started, slowestMs };
    if (Date.now() - started > 30_000) throw new Error(`${pathname} never answered ${status}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('a database outage', () => {
  it('is answered with 503 within a bounded time, and service resumes by itself when the database returns', async () => {
    expect((await fetch(`${server.url}/v1/pets`, { headers: authorized })).status).toBe(200);

    await postgres.stop();
    const detected = await until('/v1/pets', 503, authorized);
    const notReady = await until('/readyz', 503);
    const during = await fetch(`${server.url}/v1/pets`, { headers: authorized });

    expect(during.status).toBe(503);
    expect(during.headers.get('retry-after')).toBe('5');
    expect(await during.json()).toEqual({
      code: 'unavailable',
      message: expect.stringContaining('database'),
      status: 503,
    });

    postgres = await startEmbeddedPostgres(dataDir, { port });
    const recovered = await until('/v1/pets', 200, authorized);
    const ready = await until('/readyz', 200);

    console.log(
      `outage: first 503 after ${detected.ms} ms (slowest answer ${detected.slowestMs} ms), /readyz 503 after ${notReady.ms} ms; ` +
        `recovered ${recovered.ms} ms after the database was back (slowest answer ${recovered.slowestMs} ms), /readyz 200 after ${ready.ms} ms more`,
    );
    // The bound: a connection attempt gives up after 3 s (connectionTimeoutMillis), a query after 10-12 s.
    expect(detected.slowestMs).toBeLessThan(13_000);
    expect(recovered.ms).toBeLessThan(15_000);
  });
});
