import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../../src/infrastructure/database.js';
import { openTestDatabase, type TestDatabase } from '../support/database.js';
import { authorized, json, startServer, type TestServer } from '../support/server.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';

let database: TestDatabase;
let proxy: TcpProxy;
let viaProxy: DataSource;
let server: TestServer;

// The service reaches PostgreSQL through a proxy the test controls, so the database can "go away".
beforeAll(async () => {
  database = await openTestDatabase();
  proxy = await startTcpProxy(database.url);
  viaProxy = new DataSource(dataSourceOptions(proxy.url, database.schema));
  await viaProxy.initialize();
  server = await startServer(viaProxy);
});
afterAll(async () => {
  await server?.close();
  await viaProxy?.destroy();
  await proxy?.close();
  await database?.close();
});

describe('health', () => {
  it('GET /healthz answers 200 while the process is up', async () => {
    const response = await fetch(`${server.url}/healthz`);

    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok' });
  });

  it('GET /readyz answers 200 when the database answers', async () => {
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
  });

  it('answers 503 unavailable with Retry-After while the database is away, and recovers by itself', async () => {
    await proxy.cut();
    try {
      for (const [path, init] of [
        ['/readyz', {}],
        ['/v1/pets', { headers: authorized }],
        ['/v1/pets', { method: 'POST', headers: json, body: JSON.stringify({ name: 'Rex', categoryId: 1 }) }],
        ['/v1/pets/1', { headers: authorized }],
      ] as const) {
        const response = await fetch(`${server.url}${path}`, init);

        expect(response.status).toBe(503);
        expect(response.headers.get('retry-after')).toBe('5');
        expect(await response.json()).toEqual({ code: 'unavailable', message: expect.stringContaining('database'), status: 503 });
      }
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    } finally {
      await proxy.restore();
    }

    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    expect((await fetch(`${server.url}/v1/pets`, { headers: authorized })).status).toBe(200);
  });
});
