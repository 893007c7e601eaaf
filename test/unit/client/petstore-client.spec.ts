import { jest } from '@jest/globals';
import { PetstoreClient, PetstoreError, type PetstoreClientOptions } from '../../../packages/client/src/index.js';

// The package against a scripted fetch: the answers are written here, the waits are recorded
// instead of slept (moving a fake clock on), and jitter is a fixed fraction, so retry timing is checked exactly.

type Scripted = Response | Error | ((request: Request) => Promise<Response>);

const pet = (id: number) => ({ id, name: `pet ${id}`, categoryId: 1, status: 'available' });

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'Content-Type': 'application/json', 'X-Request-Id': `req-${status}`, ...headers },
  });
}

const error = (status: number, code: string, headers: Record<string, string> = {}) =>
  json(status, { code, message: `${code} message`, status }, headers);

function scriptedClient(answers: Scripted[], options: Partial<PetstoreClientOptions> = {}) {
  const requests: Request[] = [];
  const sleeps: number[] = [];
  let clock = Date.parse('2026-11-26T00:00:00Z');
  const client = new PetstoreClient({
    baseUrl: 'http://petstore.test/v1',
    apiKey: 'psk_test',
    sleep: (ms) => {
      sleeps.push(ms);
      clock += ms;
      return Promise.resolve();
    },
    random: () => 0.5,
    now: () => clock,
    onDeprecation: () => {},
    ...options,
    fetch: (request) => {
      requests.push(request);
      const next = answers.shift();
      if (next === undefined) throw new Error(`unexpected request ${request.method} ${request.url}`);
      if (next instanceof Error) return Promise.reject(next);
      return next instanceof Response ? Promise.resolve(next) : next(request);
    },
  });
  return { client, requests, sleeps };
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}

describe('pets.list', () => {
  it('follows Link rel="next" page by page, sending its cursor, and stops on the page without one', async () => {
    const { client, requests } = scriptedClient([
      json(200, [pet(1), pet(2)], { Link: '</v1/pets?limit=2&status=sold&cursor=c1>; rel="next"' }),
      json(200, [pet(3), pet(4)], { Link: '</v1/pets?limit=2&status=sold&cursor=c2>; rel="next"' }),
      json(200, [pet(5)]),
    ]);

    const ids = (await collect(client.pets.list({ status: 'sold', pageSize: 2 }))).map((p) => p.id);

    expect(ids).toEqual([1, 2, 3, 4, 5]);
    expect(requests.map((r) => r.url)).toEqual([
      'http://petstore.test/v1/pets?limit=2&status=sold',
      'http://petstore.test/v1/pets?limit=2&status=sold&cursor=c1',
      'http://petstore.test/v1/pets?limit=2&status=sold&cursor=c2',
    ]);
    expect(requests[0]?.headers.get('authorization')).toBe('Bearer psk_test');
  });

  it('reads the next link among others, and asks for pages of 100 by default', async () => {
    const { client, requests } = scriptedClient([
      json(200, [pet(1)], { Link: '</v1/pets?limit=100>; rel="first", </v1/pets?limit=100&cursor=x>; rel="next"' }),
      json(200, [], { Link: '</v1/pets?limit=100>; rel="first"' }),
    ]);

    expect(await collect(client.pets.list())).toEqual([pet(1)]);
    expect(requests.map((r) => new URL(r.url).search)).toEqual(['?limit=100', '?limit=100&cursor=x']);
  });
});

describe('pets.list as an async iterator', () => {
  const threePages = () => [
    json(200, [pet(1), pet(2)], { Link: '</v1/pets?limit=2&cursor=c1>; rel="next"' }),
    json(200, [], { Link: '</v1/pets?limit=2&cursor=c2>; rel="next"' }),
    json(200, [pet(3)]),
  ];

  it('goes past an empty page that links to the next', async () => {
    const { client, requests } = scriptedClient(threePages());

    expect((await collect(client.pets.list({ pageSize: 2 }))).map((p) => p.id)).toEqual([1, 2, 3]);
    expect(requests).toHaveLength(3);
  });

  it('asks for no further page once the loop breaks', async () => {
    const { client, requests } = scriptedClient(threePages());

    for await (const found of client.pets.list({ pageSize: 2 })) if (found.id === 1) break;

    expect(requests).toHaveLength(1);
  });

  it('answers calls of next() made at once in order, asking for one page at a time', async () => {
    const { client, requests } = scriptedClient(threePages());
    const pets = client.pets.list({ pageSize: 2 })[Symbol.asyncIterator]();

    const results = await Promise.all([1, 2, 3, 4, 5].map(() => pets.next()));

    expect(results.map((r) => (r.done ? 'done' : r.value.id))).toEqual([1, 2, 3, 'done', 'done']);
    expect(requests).toHaveLength(3);
  });

  it('ends after an error: the error once, then done', async () => {
    const { client } = scriptedClient(
      [json(200, [pet(1)], { Link: '</v1/pets?cursor=c1>; rel="next"' }), error(400, 'invalid_request')],
      { retry: { maxAttempts: 1 } },
    );
    const pets = client.pets.list()[Symbol.asyncIterator]();

    expect(await pets.next()).toEqual({ value: pet(1), done: false });
    const [failed, after] = await Promise.allSettled([pets.next(), pets.next()]);

    expect(failed).toMatchObject({ status: 'rejected', reason: { code: 'invalid_request' } });
    expect(after).toEqual({ status: 'fulfilled', value: { value: undefined, done: true } });
    expect(await pets.next()).toEqual({ value: undefined, done: true });
  });
});

describe('pets.create', () => {
  it('sends one Idempotency-Key per call and the same key on every retry', async () => {
    const { client, requests } = scriptedClient([
      new TypeError('fetch failed'),
      error(409, 'idempotency_conflict', { 'Retry-After': '1' }),
      error(429, 'rate_limited', { 'Retry-After': '2' }),
      error(503, 'unavailable', { 'Retry-After': '1' }),
      json(201, pet(7)),
      json(201, pet(8)),
    ]);

    expect(await client.pets.create({ name: 'pet 7', categoryId: 1 })).toEqual(pet(7));
    await client.pets.create({ name: 'pet 8', categoryId: 1 });

    const keys = requests.map((r) => r.headers.get('idempotency-key'));
    expect(keys[0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(keys.slice(0, 5))).toEqual(new Set([keys[0]]));
    expect(keys[5]).not.toBe(keys[0]);
    expect(await requests[4]?.json()).toEqual({ name: 'pet 7', categoryId: 1 });
  });

  it('waits as Retry-After says, or until a used-up RateLimit policy resets, plus jitter', async () => {
    const { client, sleeps } = scriptedClient([
      error(503, 'unavailable', { 'Retry-After': '3' }),
      error(429, 'rate_limited', { 'Retry-After': '2', RateLimit: '"per-key";r=0;t=7' }),
      // 11 s after the start, once the two waits before it are over: 5 s to go
      error(503, 'unavailable', { 'Retry-After': 'Thu, 26 Nov 2026 00:00:16 GMT' }),
      json(201, pet(1)),
    ]);

    await client.pets.create({ name: 'pet 1', categoryId: 1 });

    // jitter 0.2 of the wait, times random() = 0.5
    expect(sleeps).toEqual([3300, 7700, 5500]);
  });

  it('backs off by doubling from baseDelayMs when the answer names no delay', async () => {
    const { client, sleeps } = scriptedClient(
      [new TypeError('fetch failed'), new TypeError('fetch failed'), error(503, 'unavailable'), json(201, pet(1))],
      { retry: { baseDelayMs: 100, jitter: 0 } },
    );

    await client.pets.create({ name: 'pet 1', categoryId: 1 });

    expect(sleeps).toEqual([100, 200, 400]);
  });

  it.each([502, 504])('retries a gateway %i as a network error', async (status) => {
    const { client, requests } = scriptedClient([new Response('Bad Gateway', { status }), json(201, pet(1))]);

    expect(await client.pets.create({ name: 'pet 1', categoryId: 1 })).toEqual(pet(1));
    expect(requests).toHaveLength(2);
  });

  it('gives up after maxAttempts with the typed error of the last answer', async () => {
    const { client, requests } = scriptedClient(
      [1, 2, 3].map(() => error(429, 'rate_limited', { 'Retry-After': '1' })),
      { retry: { maxAttempts: 3 } },
    );

    const thrown = await client.pets.create({ name: 'pet 1', categoryId: 1 }).catch((e: unknown) => e);

    expect(requests).toHaveLength(3);
    expect(thrown).toBeInstanceOf(PetstoreError);
    expect(thrown).toMatchObject({
      code: 'rate_limited',
      message: 'rate_limited message',
      status: 429,
      requestId: 'req-429',
    });
  });

  it('gives up after maxAttempts network errors with the last of them', async () => {
    const { client, requests } = scriptedClient([new TypeError('one'), new TypeError('two')], {
      retry: { maxAttempts: 2 },
    });

    await expect(client.pets.create({ name: 'pet 1', categoryId: 1 })).rejects.toThrow('two');
    expect(requests).toHaveLength(2);
  });

  it('does not wait longer than maxDelayMs: an answer asking for more ends the call', async () => {
    const { client, requests, sleeps } = scriptedClient([error(429, 'rate_limited', { 'Retry-After': '60' })], {
      retry: { maxDelayMs: 30_000 },
    });

    await expect(client.pets.create({ name: 'pet 1', categoryId: 1 })).rejects.toMatchObject({ status: 429 });
    expect(requests).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it.each([
    [400, 'invalid_request'],
    [422, 'idempotency_key_reused'],
    [500, 'internal_error'],
  ])('does not retry a %i', async (status, code) => {
    const { client, requests } = scriptedClient([error(status, code)]);

    await expect(client.pets.create({ name: 'pet 1', categoryId: 1 })).rejects.toMatchObject({ status, code });
    expect(requests).toHaveLength(1);
  });

  it('makes an answer without the error body (a proxy page) a PetstoreError too', async () => {
    const { client } = scriptedClient([new Response('<h1>502 Bad Gateway</h1>', { status: 502 })], {
      retry: { maxAttempts: 1 },
    });

    const thrown = await client.pets.create({ name: 'pet 1', categoryId: 1 }).catch((e: unknown) => e);

    expect(thrown).toBeInstanceOf(PetstoreError);
    expect(thrown).toMatchObject({ code: 'unexpected_response', status: 502, requestId: null });
    expect((thrown as Error).message).toContain('502 Bad Gateway');
  });

  it('holds the next request until a used-up RateLimit policy resets', async () => {
    const { client, sleeps } = scriptedClient([
      json(201, pet(1), { RateLimit: '"per-key";r=0;t=4' }),
      json(201, pet(2), { RateLimit: '"per-key";r=9;t=60' }),
    ]);

    await client.pets.create({ name: 'pet 1', categoryId: 1 });
    expect(sleeps).toEqual([]);
    await client.pets.create({ name: 'pet 2', categoryId: 1 });
    expect(sleeps).toEqual([4000]);
  });

  it('uses the key the caller gives', async () => {
    const { client, requests } = scriptedClient([json(201, pet(1))]);

    await client.pets.create({ name: 'pet 1', categoryId: 1 }, { idempotencyKey: 'order-42' });

    expect(requests[0]?.headers.get('idempotency-key')).toBe('order-42');
  });
});

describe('signals and timeouts', () => {
  const hang = (request: Request) =>
    new Promise<Response>((_resolve, reject) => {
      if (request.signal.aborted) reject(request.signal.reason as Error);
      request.signal.addEventListener('abort', () => reject(request.signal.reason as Error));
    });

  it("ends the request in flight at the caller's abort, with its reason, and never retries it", async () => {
    const controller = new AbortController();
    const sent: AbortSignal[] = [];
    // A time limit the test would not outlive: only the caller's abort can end the request.
    const { client, requests } = scriptedClient(
      [
        (request) => {
          sent.push(request.signal);
          controller.abort(new Error('caller gave up'));
          return hang(request);
        },
      ],
      { timeoutMs: 600_000 },
    );

    await expect(client.pets.create({ name: 'pet 1', categoryId: 1 }, { signal: controller.signal })).rejects.toThrow(
      'caller gave up',
    );
    expect(sent[0]?.aborted).toBe(true);
    expect(sent[0]?.reason).toEqual(new Error('caller gave up'));
    expect(requests).toHaveLength(1);
  });

  it('ends a request after timeoutMs and retries it like a network error', async () => {
    const { client, requests } = scriptedClient([hang, hang], { timeoutMs: 20, retry: { maxAttempts: 2 } });

    await expect(client.pets.create({ name: 'pet 1', categoryId: 1 })).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(requests).toHaveLength(2);
    expect(requests[0]?.headers.get('idempotency-key')).toBe(requests[1]?.headers.get('idempotency-key'));
  });

  it('keeps the time limit on while the body is read', async () => {
    // Headers at once, then a body that never ends unless the request is aborted.
    const endlessBody = (request: Request) =>
      Promise.resolve(
        new Response(
          new ReadableStream({
            start(stream) {
              stream.enqueue(new TextEncoder().encode('[{"id":'));
              // As fetch does: a signal that was aborted before the request reached it ends it too (on a
              // slow first run, the 20 ms may be up by then, and the read would wait for Jest's timeout).
              if (request.signal.aborted) stream.error(request.signal.reason);
              request.signal.addEventListener('abort', () => stream.error(request.signal.reason));
            },
          }),
          { status: 200, headers: { 'Content-Type': 'application/json' } },
        ),
      );
    const { client, requests } = scriptedClient([endlessBody], { timeoutMs: 20, retry: { maxAttempts: 1 } });

    await expect(collect(client.pets.list())).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(requests).toHaveLength(1);
  });

  describe('with fake timers', () => {
    beforeEach(() => jest.useFakeTimers());
    afterEach(() => jest.useRealTimers());

    it("leaves no timer behind once the answer is read, and lets go of the caller's signal", async () => {
      const controller = new AbortController();
      const added = jest.spyOn(controller.signal, 'addEventListener');
      const removed = jest.spyOn(controller.signal, 'removeEventListener');
      const { client } = scriptedClient([
        json(200, [pet(1)], { Link: '</v1/pets?limit=100&cursor=c1>; rel="next"' }),
        json(200, [pet(2)]),
        json(201, pet(3)),
      ]);

      expect(await collect(client.pets.list({ signal: controller.signal }))).toEqual([pet(1), pet(2)]);
      await client.pets.create({ name: 'pet 3', categoryId: 1 }, { signal: controller.signal });

      expect(jest.getTimerCount()).toBe(0);
      expect(added).toHaveBeenCalledTimes(3);
      expect(removed.mock.calls).toEqual(added.mock.calls.map(([type, listener]) => [type, listener]));
    });

    it('aborts a request that outlives timeoutMs, and not one that answers in time', async () => {
      let answer: (response: Response) => void = () => {};
      const signals: AbortSignal[] = [];
      const { client } = scriptedClient(
        [
          (request) => {
            signals.push(request.signal);
            return new Promise<Response>((resolve) => (answer = resolve));
          },
          (request) => {
            signals.push(request.signal);
            return new Promise<Response>((_resolve, reject) =>
              request.signal.addEventListener('abort', () => reject(request.signal.reason as Error)),
            );
          },
        ],
        { timeoutMs: 1_000, retry: { maxAttempts: 1 } },
      );

      const first = client.pets.create({ name: 'pet 1', categoryId: 1 });
      await jest.advanceTimersByTimeAsync(999);
      answer(json(201, pet(1)));
      expect(await first).toEqual(pet(1));
      await jest.advanceTimersByTimeAsync(5_000);
      expect(signals[0]?.aborted).toBe(false);

      const second = client.pets.create({ name: 'pet 2', categoryId: 1 }).catch((e: unknown) => e);
      await jest.advanceTimersByTimeAsync(999);
      expect(signals[1]?.aborted).toBe(false);
      await jest.advanceTimersByTimeAsync(1);
      expect(await second).toMatchObject({ name: 'TimeoutError' });
    });
  });
});

describe('pets.get', () => {
  it('tells of Deprecation and Sunset once per client', async () => {
    const deprecated = { Deprecation: '@1795219200', Sunset: 'Thu, 05 Dec 2030 00:00:00 GMT' };
    const notices: unknown[] = [];
    const { client, requests } = scriptedClient(
      [json(200, pet(1), deprecated), error(404, 'not_found', deprecated), json(200, pet(1), deprecated)],
      { onDeprecation: (notice) => notices.push(notice) },
    );

    expect(await client.pets.get(1)).toEqual(pet(1));
    await expect(client.pets.get(2)).rejects.toMatchObject({ code: 'not_found', status: 404 });
    await client.pets.get(1);

    expect(notices).toEqual([
      { operation: 'getPet', deprecation: '@1795219200', sunset: 'Thu, 05 Dec 2030 00:00:00 GMT' },
    ]);
    expect(requests.map((r) => new URL(r.url).pathname)).toEqual(['/v1/pets/1', '/v1/pets/2', '/v1/pets/1']);
  });

  it('says nothing when the answer carries neither header', async () => {
    const notices: unknown[] = [];
    const { client } = scriptedClient([json(200, pet(1))], { onDeprecation: (notice) => notices.push(notice) });

    await client.pets.get(1);

    expect(notices).toEqual([]);
  });
});
