import { FlexibleRateLimits } from '../../src/infrastructure/platform/rate-limits/flexible-rate-limits.js';
import { authorized, json, type TestServer, serversOnOneDatabase } from '../support/server.js';

// IETF draft "RateLimit header fields for HTTP": RateLimit-Policy `"name";q=<quota>;w=<window>`,
// RateLimit `"name";r=<remaining>;t=<seconds to reset>`.
const { start } = serversOnOneDatabase();

async function serve(perKeyPerMinute: number): Promise<TestServer> {
  const rateLimits = new FlexibleRateLimits({ perKeyPerMinute, failedAuthenticationsPerMinute: 100 }, null);
  const server = await start({ rateLimits });
  return server;
}

function remaining(response: Response): number {
  const match = /^"per-key";r=(\d+);t=(\d+)$/.exec(response.headers.get('ratelimit') ?? '');
  if (match === null) throw new Error(`no per-key RateLimit field: ${response.headers.get('ratelimit')}`);
  return Number(match[1]);
}

describe('RateLimit header fields', () => {
  it('tell every keyed answer its "per-key" policy and what is left of it, whatever the status', async () => {
    const server = await serve(10);

    const answers = [
      await fetch(`${server.url}/v1/pets`, { headers: authorized }),
      await fetch(`${server.url}/v1/pets`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ name: 'Counted', categoryId: 1 }),
      }),
      await fetch(`${server.url}/v1/pets?limit=0`, { headers: authorized }),
      await fetch(`${server.url}/v1/pets/999999`, { headers: authorized }),
    ];

    expect(answers.map((response) => response.status)).toEqual([200, 201, 400, 404]);
    for (const response of answers) expect(response.headers.get('ratelimit-policy')).toBe('"per-key";q=10;w=60');
    expect(answers.map(remaining)).toEqual([9, 8, 7, 6]);
    for (const response of answers) {
      const seconds = Number(/t=(\d+)$/.exec(response.headers.get('ratelimit') ?? '')?.[1]);
      expect(seconds).toBeGreaterThanOrEqual(1);
      expect(seconds).toBeLessThanOrEqual(60);
    }
  });

  it('name "per-key" first on the 429 that policy refuses, with Retry-After the seconds to reset', async () => {
    const server = await serve(1);
    await fetch(`${server.url}/v1/pets`, { headers: authorized });

    const refused = await fetch(`${server.url}/v1/pets`, { headers: authorized });

    expect(refused.status).toBe(429);
    expect(refused.headers.get('ratelimit-policy')).toBe('"per-key";q=1;w=60');
    const [, left, seconds] = /^"per-key";r=(\d+);t=(\d+)$/.exec(refused.headers.get('ratelimit') ?? '') ?? [];
    expect(left).toBe('0');
    expect(refused.headers.get('retry-after')).toBe(seconds);
  });

  it('are not sent without a key, nor when rate limiting is off', async () => {
    const limited = await serve(10);
    const unlimited = await start();

    const withoutKey = await fetch(`${limited.url}/v1/pets`);
    const off = await fetch(`${unlimited.url}/v1/pets`, { headers: authorized });

    expect(withoutKey.status).toBe(401);
    expect(withoutKey.headers.get('ratelimit')).toBeNull();
    expect(off.status).toBe(200);
    expect(off.headers.get('ratelimit')).toBeNull();
    expect(off.headers.get('ratelimit-policy')).toBeNull();
  });
});
