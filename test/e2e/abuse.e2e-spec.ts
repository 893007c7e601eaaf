import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { ApiKeyRecord } from '../../src/infrastructure/access/api-key.record.js';
import { TypeOrmApiKeys } from '../../src/infrastructure/access/typeorm-api-keys.js';
import { FlexibleRateLimits } from '../../src/infrastructure/platform/rate-limits/flexible-rate-limits.js';
import { authorized, TEST_API_KEY, type TestServer, serversOnOneDatabase, startServer } from '../support/server.js';
import { startRedis } from '../support/redis-server.js';
import { startTcpProxy } from '../support/tcp-proxy.js';

const { database, start } = serversOnOneDatabase();

function list(server: TestServer, headers: Record<string, string>): Promise<Response> {
  return fetch(`${server.url}/v1/pets`, { headers });
}

describe('rate limits', () => {
  it('answers 429 rate_limited with Retry-After once a key has used its requests for the minute', async () => {
    const server = await start({
      rateLimits: new FlexibleRateLimits({ perKeyPerMinute: 5, failedAuthenticationsPerMinute: 100 }, null),
    });

    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await list(server, authorized)).status);
    const limited = await list(server, authorized);

    expect(statuses).toEqual([200, 200, 200, 200, 200]);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(limited.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    expect(await limited.json()).toEqual({
      code: 'rate_limited',
      message: expect.stringContaining('API key'),
      status: 429,
    });
    // Another key has its own allowance.
    expect((await list(server, { Authorization: 'Bearer second-test-key-abcdefghijklmnop' })).status).toBe(200);
  });

  it('limits failed authentications per client address, so keys cannot be guessed at speed', async () => {
    const server = await start({
      rateLimits: new FlexibleRateLimits({ perKeyPerMinute: 100, failedAuthenticationsPerMinute: 3 }, null),
    });

    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await list(server, { Authorization: `Bearer guess-${i}` })).status);
    const limited = await list(server, { Authorization: 'Bearer guess-4' });

    expect(statuses).toEqual([401, 401, 401]);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await limited.json()).toEqual({
      code: 'rate_limited',
      message: expect.stringContaining('failed authentications'),
      status: 429,
    });
    // A caller with a valid key is not the one being limited.
    expect((await list(server, authorized)).status).toBe(200);
  });

  it('answers an address over its failed-authentication limit without a database lookup, whatever key it tries next', async () => {
    const proxy = await startTcpProxy(database().url);
    const server = await startServer(
      { url: proxy.url, schema: database().schema },
      { rateLimits: new FlexibleRateLimits({ perKeyPerMinute: 100, failedAuthenticationsPerMinute: 2 }, null) },
    );
    try {
      const statuses = [
        (await list(server, { Authorization: 'Bearer guess-1' })).status,
        (await list(server, { Authorization: 'Bearer guess-2' })).status,
      ];
      await proxy.cut();

      const next = await list(server, { Authorization: 'Bearer guess-never-seen' });

      expect(statuses).toEqual([401, 401]);
      expect(next.status).toBe(429);
      await proxy.restore();
      // A valid key from the same address is not the one being limited.
      expect((await list(server, authorized)).status).toBe(200);
    } finally {
      await server.close();
      await proxy.close();
    }
  });

  it('shares the counters between instances through Redis (REDIS_URL, else a redis-server of its own)', async () => {
    const own = process.env.REDIS_URL ? null : await startRedis();
    const redisUrl = process.env.REDIS_URL || (own?.url ?? '');
    const redisA = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
    const redisB = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
    // The test key's counter may remain from an earlier run on the same Redis.
    await redisA.del(`petstore:key:${createHash('sha256').update(TEST_API_KEY).digest('hex')}`);
    try {
      const a = await start({
        rateLimits: new FlexibleRateLimits({ perKeyPerMinute: 4, failedAuthenticationsPerMinute: 100 }, redisA),
      });
      const b = await start({
        rateLimits: new FlexibleRateLimits({ perKeyPerMinute: 4, failedAuthenticationsPerMinute: 100 }, redisB),
      });

      const statuses = [
        (await list(a, authorized)).status,
        (await list(b, authorized)).status,
        (await list(a, authorized)).status,
        (await list(b, authorized)).status,
      ];
      const fifth = await list(b, authorized);

      expect(statuses).toEqual([200, 200, 200, 200]);
      expect(fifth.status).toBe(429);
    } finally {
      redisA.disconnect();
      redisB.disconnect();
      await own?.stop();
    }
  });
});

describe('stored keys over HTTP', () => {
  it('accepts an issued key, and every instance refuses it within the cache time once revoked', async () => {
    const a = await start({ apiKeyCacheSeconds: 1 });
    const b = await start({ apiKeyCacheSeconds: 1 });
    const keys = new TypeOrmApiKeys(database().dataSource.getRepository(ApiKeyRecord), []);
    const { id, key } = await keys.issue('e2e');
    const bearer = { Authorization: `Bearer ${key}` };
    expect((await list(a, bearer)).status).toBe(200);
    expect((await list(b, bearer)).status).toBe(200);

    await keys.revoke(id);
    const revokedAt = Date.now();
    const refusedAfter = await Promise.all(
      [a, b].map(async (server) => {
        while ((await list(server, bearer)).status === 200) await new Promise((resolve) => setTimeout(resolve, 50));
        return Date.now() - revokedAt;
      }),
    );

    expect(Math.max(...refusedAfter)).toBeLessThanOrEqual(1200);
    const response = await list(a, bearer);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toContain('invalid_token');
  });
});

describe('response headers a security review expects', () => {
  it('sends nosniff and no-store on API answers, and no X-Powered-By', async () => {
    const server = await start();

    for (const response of [
      await list(server, authorized),
      await list(server, {}),
      await fetch(`${server.url}/v1/nope`, { headers: authorized }),
      await fetch(`${server.url}/v1`, { headers: authorized }),
    ]) {
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(response.headers.get('cache-control')).toBe('no-store');
      expect(response.headers.get('x-powered-by')).toBeNull();
    }
  });
});
