import {
  connectRedis,
  FlexibleRateLimits,
} from '../../src/infrastructure/platform/rate-limits/flexible-rate-limits.js';
import { openTestDatabase, type TestDatabase } from '../support/database.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { authorized, startServer, type TestServer } from '../support/server.js';

let database: TestDatabase;
let redis: TestRedis;
let server: TestServer;
let client: Awaited<ReturnType<typeof connectRedis>>;

beforeAll(async () => {
  database = await openTestDatabase();
  redis = await startRedis();
  client = await connectRedis(redis.url);
  client.on('error', () => undefined);
  server = await startServer(database, {
    rateLimits: new FlexibleRateLimits({ perKeyPerMinute: 10_000, failedAuthenticationsPerMinute: 10_000 }, client),
  });
});
afterAll(async () => {
  await server?.close();
  client?.disconnect();
  await redis?.stop();
  await database?.close();
});

/** Status and milliseconds of one request. */
async function timed(
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; ms: number; body: unknown }> {
  const started = performance.now();
  const response = await fetch(`${server.url}${path}`, { headers, signal: AbortSignal.timeout(10_000) });
  const body: unknown = await response.json();
  return { status: response.status, ms: performance.now() - started, body };
}

describe('a Redis that stops answering', () => {
  it('costs each request less than 1 s: counting falls back to memory, and /readyz says what is degraded', async () => {
    expect(await timed('/readyz')).toMatchObject({ status: 200, body: { status: 'ok' } });

    redis.pause();
    try {
      const withKey = await timed('/v1/pets', authorized);
      const wrongKey = await timed('/v1/pets', { Authorization: 'Bearer wrong' });
      const noKey = await timed('/v1/pets');
      const ready = await timed('/readyz');
      console.log(
        `Redis paused: ${[withKey, wrongKey, noKey, ready].map(({ status, ms }) => `${status} in ${Math.round(ms)} ms`).join(', ')}`,
      );

      expect([withKey.status, wrongKey.status, noKey.status]).toEqual([200, 401, 401]);
      for (const answer of [withKey, wrongKey, noKey, ready]) expect(answer.ms).toBeLessThan(1000);
      expect(ready).toMatchObject({
        status: 200,
        body: { status: 'ok', degraded: [expect.stringContaining('Redis does not answer')] },
      });
    } finally {
      redis.resume();
    }

    expect(await timed('/readyz')).toMatchObject({ status: 200, body: { status: 'ok' } });
    expect((await timed('/v1/pets', authorized)).status).toBe(200);
  });
});
