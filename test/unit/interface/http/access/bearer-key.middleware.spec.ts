import {
  ApiKeys,
  type ApiKeyInfo,
  type IssuedApiKey,
  type RevokeResult,
} from '../../../../../src/application/access/api-keys.js';
import type { RateLimits } from '../../../../../src/application/platform/rate-limits.js';
import {
  FlexibleRateLimits,
  NoRateLimits,
} from '../../../../../src/infrastructure/platform/rate-limits/flexible-rate-limits.js';
import {
  BearerKeyMiddleware,
  MAX_VOUCHED_KEYS,
} from '../../../../../src/interface/http/access/bearer-key.middleware.js';
import { ApiError } from '../../../../../src/interface/http/platform/api-error.js';

/** Keys starting `valid-` are valid, found by a store lookup (counted); `env-key` is recognised without one. */
class FakeApiKeys extends ApiKeys {
  lookups = 0;
  readonly revoked = new Set<string>();

  identify(key: string): Promise<string | null> {
    this.lookups++;
    return Promise.resolve(key.startsWith('valid-') && !this.revoked.has(key) ? `caller:${key}` : null);
  }
  recognise(key: string): string | null {
    return key === 'env-key' ? 'caller:env' : null;
  }
  issue(): Promise<IssuedApiKey> {
    throw new Error('not used');
  }
  list(): Promise<ApiKeyInfo[]> {
    throw new Error('not used');
  }
  revoke(): Promise<RevokeResult> {
    throw new Error('not used');
  }
  hasUsableKey(): Promise<boolean> {
    throw new Error('not used');
  }
  issueIfNone(): Promise<IssuedApiKey | null> {
    throw new Error('not used');
  }
}

const ADDRESS = '203.0.113.9';

function setUp(
  failedAuthenticationsPerMinute = 2,
  limits: RateLimits = new FlexibleRateLimits({ perKeyPerMinute: 1_000_000, failedAuthenticationsPerMinute }, null),
) {
  const keys = new FakeApiKeys();
  const middleware = new BearerKeyMiddleware(keys, limits);

  /** The outcome of one request: the caller it was let through as, or the refusal's status and headers. */
  async function send(authorization: string | undefined) {
    const headers: Record<string, string> = {};
    const request: { headers: object; ip: string; caller?: string } = {
      headers: authorization === undefined ? {} : { authorization },
      ip: ADDRESS,
    };
    const response = { setHeader: (name: string, value: string) => (headers[name] = value) };
    const error = await new Promise<unknown>((resolve) => middleware.use(request as never, response as never, resolve));
    if (error === undefined) return { caller: request.caller, headers };
    if (!(error instanceof ApiError)) throw new Error('not an ApiError', { cause: error });
    return { status: error.getStatus(), message: error.message, headers: { ...headers, ...error.headers } };
  }
  return { keys, middleware, send };
}

const CHALLENGE = 'Bearer realm="petstore"';

/**
 * A 429 as the contract has it: the reason and when to retry in the message, the policy that
 * refused with nothing left of it, and Retry-After giving the same seconds as the message and
 * RateLimit.
 */
function expectTooManyRequests(
  outcome: { status?: number; message?: string; headers: Record<string, string> },
  reason: string,
  policy: string,
): void {
  const seconds = outcome.headers['Retry-After'] ?? '';
  expect(seconds).toMatch(/^[1-9]\d*$/);
  expect(outcome).toMatchObject({ status: 429, message: `${reason}; retry in ${seconds} s` });
  expect(outcome.headers).toMatchObject({
    'RateLimit-Policy': policy,
    RateLimit: `${policy.split(';')[0]};r=0;t=${seconds}`,
  });
}

describe('BearerKeyMiddleware', () => {
  it('refuses a request without a key with 401 and a challenge, without a lookup, and counts no failure', async () => {
    const { keys, send } = setUp(1);

    for (let i = 0; i < 3; i++)
      expect(await send(undefined)).toEqual({
        status: 401,
        message: 'Missing API key: send Authorization: Bearer <key>',
        headers: { 'WWW-Authenticate': CHALLENGE },
      });

    expect(keys.lookups).toBe(0);
    expect(await send('Bearer valid-a')).toMatchObject({ caller: 'caller:valid-a' });
  });

  it.each([
    'Basic dmFsaWQtYQ==',
    'Bearer',
    'Bearer ',
    'Bearervalid-a',
    'Bearer valid a',
    'Token valid-a',
    'Token Bearer valid-a',
  ])('reads %j as no key', async (authorization) => {
    const { keys, send } = setUp();

    expect(await send(authorization)).toMatchObject({ status: 401, message: expect.stringContaining('Missing') });
    expect(keys.lookups).toBe(0);
  });

  it.each(['Bearer valid-a', 'bearer valid-a', 'BEARER valid-a', 'Bearer   valid-a', 'Bearer valid-a  '])(
    'reads the key of %j',
    async (authorization) => {
      const { send } = setUp();

      expect(await send(authorization)).toMatchObject({ caller: 'caller:valid-a' });
    },
  );

  it('lets a valid key through as its caller, with its rate-limit headers', async () => {
    const { send } = setUp();

    expect(await send('Bearer valid-a')).toEqual({
      caller: 'caller:valid-a',
      headers: { 'RateLimit-Policy': '"per-key";q=1000000;w=60', RateLimit: '"per-key";r=999999;t=60' },
    });
  });

  it('refuses a key past its own quota with 429', async () => {
    const limits = new FlexibleRateLimits({ perKeyPerMinute: 1, failedAuthenticationsPerMinute: 5 }, null);
    const { send } = setUp(5, limits);
    await send('Bearer valid-a');

    const refused = await send('Bearer valid-a');

    expectTooManyRequests(refused, 'Rate limit exceeded for this API key', '"per-key";q=1;w=60');
    expect(await send('Bearer valid-b')).toMatchObject({ caller: 'caller:valid-b' });
  });

  it('answers wrong keys 401 until the address has spent its failures, then 429 without a lookup', async () => {
    const { keys, send } = setUp(2);

    expect(await send('Bearer wrong-1')).toEqual({
      status: 401,
      message: 'Invalid API key',
      headers: {
        'WWW-Authenticate': `${CHALLENGE}, error="invalid_token"`,
        'RateLimit-Policy': '"failed-auth";q=2;w=60',
        RateLimit: '"failed-auth";r=1;t=60',
      },
    });
    expect(await send('Bearer wrong-2')).toMatchObject({ status: 401 });
    const refused = await send('Bearer wrong-3');
    expectTooManyRequests(refused, 'Too many failed authentications from this address', '"failed-auth";q=2;w=60');
    expect(keys.lookups).toBe(2);

    expect(await send('Bearer wrong-4')).toMatchObject({ status: 429 });
    expect(await send('Bearer valid-never-seen')).toMatchObject({ status: 429 });
    expect(keys.lookups).toBe(2);
    expect(await send('Bearer env-key')).toMatchObject({ caller: 'caller:env' });
  });

  it('refuses a guess from an address it knows blocked at once, before use() returns: no lookup, no promise', async () => {
    const { keys, middleware, send } = setUp(1);
    await send('Bearer wrong-1');
    expect(await send('Bearer wrong-2')).toMatchObject({ status: 429 });
    const lookups = keys.lookups;

    const answered: unknown[] = [];
    const request = { headers: { authorization: 'Bearer wrong-3' }, ip: ADDRESS };
    middleware.use(request as never, { setHeader: () => undefined } as never, (error) => answered.push(error));

    expect(answered).toEqual([expect.objectContaining({ status: 429 })]);
    expect(keys.lookups).toBe(lookups);
  });

  it('lets a key a lookup vouched for through a blocked address, until the store stops accepting it', async () => {
    const { keys, send } = setUp(1);
    await send('Bearer valid-a');
    await send('Bearer wrong-1');
    expect(await send('Bearer wrong-2')).toMatchObject({ status: 429 });

    expect(await send('Bearer valid-a')).toMatchObject({ caller: 'caller:valid-a' });
    expect(await send('Bearer valid-b')).toMatchObject({ status: 429 });

    keys.revoked.add('valid-a');
    expect(await send('Bearer valid-a')).toMatchObject({ status: 429 });
    const lookups = keys.lookups;
    expect(await send('Bearer valid-a')).toMatchObject({ status: 429 });
    expect(keys.lookups).toBe(lookups);
  });

  it('answers a wrong key 401 with no rate-limit headers when limits are off', async () => {
    const { send } = setUp(1, new NoRateLimits());

    for (let i = 0; i < 3; i++)
      expect(await send('Bearer wrong')).toEqual({
        status: 401,
        message: 'Invalid API key',
        headers: { 'WWW-Authenticate': `${CHALLENGE}, error="invalid_token"` },
      });
    expect(await send('Bearer valid-a')).toEqual({ caller: 'caller:valid-a', headers: {} });
  });

  it(`vouches for at most ${MAX_VOUCHED_KEYS} keys, forgetting the least recent`, async () => {
    const { send } = setUp(1);
    for (let i = 0; i <= MAX_VOUCHED_KEYS; i++) await send(`Bearer valid-${i}`);
    await send('Bearer wrong-1');
    expect(await send('Bearer wrong-2')).toMatchObject({ status: 429 });

    expect(await send('Bearer valid-0')).toMatchObject({ status: 429 });
    expect(await send('Bearer valid-1')).toMatchObject({ caller: 'caller:valid-1' });
    expect(await send(`Bearer valid-${MAX_VOUCHED_KEYS}`)).toMatchObject({
      caller: `caller:valid-${MAX_VOUCHED_KEYS}`,
    });
  });
});
