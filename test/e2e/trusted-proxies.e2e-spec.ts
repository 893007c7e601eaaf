import { FlexibleRateLimits } from '../../src/infrastructure/platform/rate-limits/flexible-rate-limits.js';
import { getFrom } from '../support/from-address.js';
import { serversOnOneDatabase } from '../support/server.js';

// The failed-authentication limit counts per client address. Behind a balancer every request
// comes from the balancer, so the client address must come from its X-Forwarded-For, and only
// when the balancer is a trusted proxy: from anyone else the header changes nothing.

const { start } = serversOnOneDatabase();

/** A fresh server (fresh in-memory counters) allowing 3 failed authentications a minute per address. */
async function serve(trustedProxies?: string): Promise<string> {
  const rateLimits = new FlexibleRateLimits({ perKeyPerMinute: 1000, failedAuthenticationsPerMinute: 3 }, null);
  const server = await start({ rateLimits, trustedProxies });
  return `${server.url}/v1/pets`;
}

/** Statuses of `count` wrong-key requests from a source address, with an optional X-Forwarded-For. */
async function wrongKeys(url: string, from: string, count: number, forwardedFor?: string): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) {
    const headers: Record<string, string> = { Authorization: `Bearer wrong-${i}` };
    if (forwardedFor !== undefined) headers['X-Forwarded-For'] = forwardedFor;
    statuses.push((await getFrom(from, url, headers)).status);
  }
  return statuses;
}

describe('TRUSTED_PROXIES', () => {
  it('unset: a forged X-Forwarded-For changes nothing; the socket address is the client', async () => {
    const url = await serve();

    // Each request claims another address; all count against 127.0.0.2.
    const statuses = [];
    for (let i = 1; i <= 4; i++) statuses.push(...(await wrongKeys(url, '127.0.0.2', 1, `203.0.113.${i}`)));

    expect(statuses).toEqual([401, 401, 401, 429]);
    // Another source address has its own allowance.
    expect(await wrongKeys(url, '127.0.0.3', 1)).toEqual([401]);
  });

  it('from a trusted proxy, each forwarded client address is a bucket of its own', async () => {
    const url = await serve('127.0.0.2');

    expect(await wrongKeys(url, '127.0.0.2', 4, '203.0.113.5')).toEqual([401, 401, 401, 429]);
    // Same proxy, another client: not blocked.
    expect(await wrongKeys(url, '127.0.0.2', 1, '203.0.113.6')).toEqual([401]);
    // What the blocked client put in front of the proxy's entry is not believed: the proxy
    // appends the address it saw, and that one is still blocked.
    expect(await wrongKeys(url, '127.0.0.2', 1, '198.51.100.1, 203.0.113.5')).toEqual([429]);
  });

  it('from an address that is not a trusted proxy, X-Forwarded-For is ignored', async () => {
    const url = await serve('127.0.0.2, 10.0.0.0/8');

    // 127.0.0.3 is not trusted: every claim counts against 127.0.0.3 itself.
    expect(await wrongKeys(url, '127.0.0.3', 4, '203.0.113.7')).toEqual([401, 401, 401, 429]);
    expect(await wrongKeys(url, '127.0.0.3', 1, '203.0.113.8')).toEqual([429]);
    // ...and did not block the address it claimed to be, seen through the trusted proxy.
    expect(await wrongKeys(url, '127.0.0.2', 1, '203.0.113.7')).toEqual([401]);
  });
});
