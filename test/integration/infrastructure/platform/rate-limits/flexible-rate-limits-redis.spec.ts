import { once } from 'node:events';
import {
  connectRedis,
  FlexibleRateLimits,
} from '../../../../../src/infrastructure/platform/rate-limits/flexible-rate-limits.js';
import { startRedis, type TestRedis } from '../../../../support/redis-server.js';

let redis: TestRedis;
const clients: Array<Awaited<ReturnType<typeof connectRedis>>> = [];

/** One instance's limits, once its Redis client is ready (before, the limiter counts in memory). */
async function instance(): Promise<FlexibleRateLimits> {
  const client = await connectRedis(redis.url);
  client.on('error', () => undefined);
  clients.push(client);
  if (client.status !== 'ready') await once(client, 'ready');
  return new FlexibleRateLimits({ perKeyPerMinute: 100, failedAuthenticationsPerMinute: 2 }, client);
}

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  for (const client of clients) client.disconnect();
  await redis?.stop();
});

describe('FlexibleRateLimits shared through Redis', () => {
  it('an address blocked by another instance is known after one look, and stays refused while Redis is away', async () => {
    const counting = await instance();
    const other = await instance();
    await counting.hitFailedAuthentication('198.51.100.7');
    await counting.hitFailedAuthentication('198.51.100.7');
    expect(other.knownFailedAuthenticationBlock('198.51.100.7')).toBeNull();

    const looked = await other.failedAuthenticationBlock('198.51.100.7');
    expect(looked).toMatchObject({ policy: 'failed-auth', remaining: 0, refused: true });

    redis.pause();
    try {
      // Asked now, Redis would not answer (the look would find nothing, and let a guess through).
      expect(await other.failedAuthenticationBlock('198.51.100.7')).toBeNull();
      expect(other.knownFailedAuthenticationBlock('198.51.100.7')).toMatchObject({ refused: true });
    } finally {
      redis.resume();
    }
  });
});
