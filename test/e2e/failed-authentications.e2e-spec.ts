import { ApiKeyRecord } from '../../src/infrastructure/access/api-key.record.js';
import { TypeOrmApiKeys } from '../../src/infrastructure/access/typeorm-api-keys.js';
import { FlexibleRateLimits } from '../../src/infrastructure/platform/rate-limits/flexible-rate-limits.js';
import { getFrom } from '../support/from-address.js';
import { authorized, type TestServer, serversOnOneDatabase, startServer } from '../support/server.js';
import { startTcpProxy } from '../support/tcp-proxy.js';

// Requests from fetch come from 127.0.0.1; getFrom() sends from another loopback address, another client.
const { database, start } = serversOnOneDatabase();

/** A fresh server (fresh counters) allowing `failures` wrong keys a minute per address. */
async function serve(failures: number, apiKeyCacheSeconds = 5): Promise<TestServer> {
  const rateLimits = new FlexibleRateLimits({ perKeyPerMinute: 100, failedAuthenticationsPerMinute: failures }, null);
  const server = await start({ rateLimits, apiKeyCacheSeconds });
  return server;
}

function list(server: TestServer, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${server.url}/v1/pets`, { headers });
}

async function block(server: TestServer, failures: number): Promise<Response> {
  for (let i = 0; i < failures; i++)
    expect((await list(server, { Authorization: `Bearer guess-${i}` })).status).toBe(401);
  return list(server, { Authorization: 'Bearer one-guess-too-many' });
}

/** The service's own cache of stored keys' verdicts (API_KEY_CACHE_SECONDS=1) has let go once this has passed. */
const CACHE_SECONDS_1 = 1100;

function outlive(milliseconds: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, milliseconds));
}

async function issueKey(): Promise<Record<string, string>> {
  const keys = new TypeOrmApiKeys(database().dataSource.getRepository(ApiKeyRecord), []);
  const { key } = await keys.issue('failed-authentications e2e');
  return { Authorization: `Bearer ${key}` };
}

describe('failed authentications', () => {
  it('counts no request without an Authorization header: it is answered 401 and blocks nobody', async () => {
    const server = await serve(2);

    const statuses = [];
    for (let i = 0; i < 10; i++) statuses.push((await list(server)).status);

    expect(statuses).toEqual(Array(10).fill(401));
    // The whole allowance of wrong keys is still there.
    expect((await list(server, { Authorization: 'Bearer guess-a' })).status).toBe(401);
    expect((await list(server, { Authorization: 'Bearer guess-b' })).status).toBe(401);
    expect((await list(server, { Authorization: 'Bearer guess-c' })).status).toBe(429);
  });

  it('tells a wrong key its failed-auth budget, and refuses the one past it with the "failed-auth" policy first', async () => {
    const server = await serve(2);

    const first = await list(server, { Authorization: 'Bearer guess-1' });
    await list(server, { Authorization: 'Bearer guess-2' });
    const refused = await list(server, { Authorization: 'Bearer guess-3' });

    expect(first.status).toBe(401);
    expect(first.headers.get('ratelimit-policy')).toBe('"failed-auth";q=2;w=60');
    expect(first.headers.get('ratelimit')).toMatch(/^"failed-auth";r=1;t=\d+$/);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('ratelimit')).toMatch(/^"failed-auth";r=0;t=\d+$/);
    expect(refused.headers.get('ratelimit-policy')).toBe('"failed-auth";q=2;w=60');
    expect(refused.headers.get('retry-after')).toBe(/t=(\d+)$/.exec(refused.headers.get('ratelimit') ?? '')?.[1]);
  });

  it('answers a key from API_KEYS as usual from a blocked address', async () => {
    const server = await serve(2);
    expect((await block(server, 2)).status).toBe(429);

    const response = await list(server, authorized);

    expect(response.status).toBe(200);
    expect(response.headers.get('ratelimit')).toMatch(/^"per-key";/);
  });

  it('keeps answering a stored key in use from a blocked address, even once its verdict has left the cache', async () => {
    const server = await serve(2, 1);
    const stored = await issueKey();
    expect((await list(server, stored)).status).toBe(200);
    expect((await block(server, 2)).status).toBe(429);
    await outlive(CACHE_SECONDS_1);

    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await list(server, stored)).status);

    expect(statuses).toEqual([200, 200, 200]);
    // Wrong keys from the same address are still refused.
    expect((await list(server, { Authorization: 'Bearer guess-after' })).status).toBe(429);
  });

  it('refuses a stored key first seen from a blocked address until the block ends, and serves it from any other address', async () => {
    const server = await serve(2);
    const stored = await issueKey();
    expect((await block(server, 2)).status).toBe(429);

    const fromBlocked = await list(server, stored);
    const fromElsewhere = await getFrom('127.0.0.2', `${server.url}/v1/pets`, stored);
    const fromBlockedAgain = await list(server, stored);

    expect(fromBlocked.status).toBe(429);
    expect(fromBlocked.headers.get('ratelimit')).toMatch(/^"failed-auth";r=0;/);
    expect(fromElsewhere.status).toBe(200);
    // Accepted elsewhere, the key is now one the service has verified: its address's block no longer stops it.
    expect(fromBlockedAgain.status).toBe(200);
  });

  it('forgets a stored key once revoked: from a blocked address it is a wrong key again', async () => {
    const server = await serve(2, 1);
    const keys = new TypeOrmApiKeys(database().dataSource.getRepository(ApiKeyRecord), []);
    const { id, key } = await keys.issue('revoked from a blocked address');
    const stored = { Authorization: `Bearer ${key}` };
    expect((await list(server, stored)).status).toBe(200);
    expect((await block(server, 2)).status).toBe(429);

    await keys.revoke(id);
    await outlive(CACHE_SECONDS_1);

    expect((await list(server, stored)).status).toBe(429);
  });

  it('spends no store lookup on a stored key first seen from a blocked address', async () => {
    const proxy = await startTcpProxy(database().url);
    const rateLimits = new FlexibleRateLimits({ perKeyPerMinute: 100, failedAuthenticationsPerMinute: 1 }, null);
    const server = await startServer({ url: proxy.url, schema: database().schema }, { rateLimits });
    try {
      const stored = await issueKey();
      expect((await list(server, { Authorization: 'Bearer guess' })).status).toBe(401);
      await proxy.cut();

      // Without the database a lookup would be a 503: the 429 shows none was tried.
      expect((await list(server, stored)).status).toBe(429);
    } finally {
      await proxy.restore();
      await server.close();
      await proxy.close();
    }
  });
});
