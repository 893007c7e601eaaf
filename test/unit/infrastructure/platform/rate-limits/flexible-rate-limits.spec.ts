import {
  FlexibleRateLimits,
  MAX_KNOWN_REFUSALS,
  NoRateLimits,
} from '../../../../../src/infrastructure/platform/rate-limits/flexible-rate-limits.js';

describe('FlexibleRateLimits (in memory)', () => {
  it('reports the "per-key" budget of each request, and refuses the one past the quota', async () => {
    const limits = new FlexibleRateLimits({ perKeyPerMinute: 2, failedAuthenticationsPerMinute: 5 }, null);

    const first = await limits.hitKey('caller-a');
    const second = await limits.hitKey('caller-a');
    const third = await limits.hitKey('caller-a');
    const other = await limits.hitKey('caller-b');

    expect(first).toEqual({
      policy: 'per-key',
      quota: 2,
      windowSeconds: 60,
      remaining: 1,
      resetSeconds: 60,
      refused: false,
    });
    expect(second).toMatchObject({ remaining: 0, refused: false });
    expect(third).toMatchObject({ policy: 'per-key', remaining: 0, refused: true });
    expect(third?.resetSeconds).toBeGreaterThanOrEqual(1);
    expect(third?.resetSeconds).toBeLessThanOrEqual(60);
    expect(other).toMatchObject({ remaining: 1, refused: false });
  });

  it('blocks an address only once its "failed-auth" quota is used, and looking does not count', async () => {
    const limits = new FlexibleRateLimits({ perKeyPerMinute: 100, failedAuthenticationsPerMinute: 2 }, null);

    const before = await limits.failedAuthenticationBlock('192.0.2.1');
    const firstFailure = await limits.hitFailedAuthentication('192.0.2.1');
    for (let i = 0; i < 5; i++) await limits.failedAuthenticationBlock('192.0.2.1');
    const stillOpen = await limits.failedAuthenticationBlock('192.0.2.1');
    const secondFailure = await limits.hitFailedAuthentication('192.0.2.1');
    const blocked = await limits.failedAuthenticationBlock('192.0.2.1');

    expect(before).toBeNull();
    expect(firstFailure).toMatchObject({ policy: 'failed-auth', quota: 2, remaining: 1, refused: false });
    expect(stillOpen).toBeNull();
    expect(secondFailure).toMatchObject({ remaining: 0, refused: false });
    expect(blocked).toMatchObject({ policy: 'failed-auth', remaining: 0, refused: true });
    expect(await limits.failedAuthenticationBlock('192.0.2.2')).toBeNull();
  });
});

describe('FlexibleRateLimits: the blocks an instance already knows', () => {
  it('knows an address blocked from the hit refused, until its window ends, and nothing before', async () => {
    let now = 1_000_000;
    const limits = new FlexibleRateLimits({ perKeyPerMinute: 100, failedAuthenticationsPerMinute: 1 }, null, () => now);

    await limits.hitFailedAuthentication('192.0.2.1');
    expect(limits.knownFailedAuthenticationBlock('192.0.2.1')).toBeNull();
    const refused = await limits.hitFailedAuthentication('192.0.2.1');
    expect(refused).toMatchObject({ refused: true });

    expect(limits.knownFailedAuthenticationBlock('192.0.2.1')).toEqual(refused);
    expect(limits.knownFailedAuthenticationBlock('192.0.2.2')).toBeNull();
    // The window's end, as the limiter gave it, to the second: the last second is still refused.
    now += ((refused?.resetSeconds ?? 0) - 1) * 1000;
    expect(limits.knownFailedAuthenticationBlock('192.0.2.1')).toMatchObject({ refused: true, resetSeconds: 1 });
    now += 1000;
    expect(limits.knownFailedAuthenticationBlock('192.0.2.1')).toBeNull();
  });

  it('knows a block it only looked at (the failures may have been counted by another instance)', async () => {
    const limits = new FlexibleRateLimits({ perKeyPerMinute: 100, failedAuthenticationsPerMinute: 2 }, null);
    await limits.hitFailedAuthentication('192.0.2.1');
    await limits.hitFailedAuthentication('192.0.2.1');
    expect(limits.knownFailedAuthenticationBlock('192.0.2.1')).toBeNull();

    const looked = await limits.failedAuthenticationBlock('192.0.2.1');

    expect(looked).toMatchObject({ policy: 'failed-auth', refused: true });
    expect(limits.knownFailedAuthenticationBlock('192.0.2.1')).toEqual(looked);
  });

  it(`remembers at most ${MAX_KNOWN_REFUSALS} blocked addresses, forgetting the least recent: a flood from many addresses cannot grow memory`, async () => {
    const limits = new FlexibleRateLimits({ perKeyPerMinute: 100, failedAuthenticationsPerMinute: 1 }, null);
    const addresses = Array.from(
      { length: MAX_KNOWN_REFUSALS + 1 },
      (_, i) => `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`,
    );
    for (const address of addresses) {
      await limits.hitFailedAuthentication(address);
      await limits.hitFailedAuthentication(address);
    }

    expect(limits.knownFailedAuthenticationBlock(addresses[0] ?? '')).toBeNull();
    expect(limits.knownFailedAuthenticationBlock(addresses[1] ?? '')).toMatchObject({ refused: true });
    expect(limits.knownFailedAuthenticationBlock(addresses.at(-1) ?? '')).toMatchObject({ refused: true });
  });

  it('remembers no block with rate limiting off', () => {
    expect(new NoRateLimits().knownFailedAuthenticationBlock()).toBeNull();
  });
});
