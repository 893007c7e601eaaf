import { request as httpRequest } from 'node:http';
import { PetstoreClient } from '../../packages/client/src/index.js';
import { readPet } from '../support/http.js';
import { json, TEST_API_KEY, useService } from '../support/server.js';

// Through a proxy, so that one test can make the database fail mid-way.
const service = useService({ throughProxy: true });

const OTHER_KEY = { Authorization: 'Bearer second-test-key-abcdefghijklmnop' };

function create(
  body: unknown,
  idempotencyKey: string | null,
  headers: Record<string, string> = json,
  signal?: AbortSignal,
): Promise<Response> {
  return fetch(`${service.server.url}/v1/pets`, {
    method: 'POST',
    headers: {
      ...headers,
      'Content-Type': 'application/json',
      ...(idempotencyKey === null ? {} : { 'Idempotency-Key': idempotencyKey }),
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal,
  });
}

async function petCount(): Promise<number> {
  const rows: { n: number }[] = await service.database.dataSource.query('SELECT count(*)::int AS n FROM pets');
  return Number(rows[0]?.n);
}

describe('Idempotency-Key on POST /v1/pets', () => {
  it('replays the original status, body and Location for a retry, and creates nothing', async () => {
    const first = await create({ name: 'Rex', categoryId: 1 }, 'key-1');
    const firstBody = await first.text();

    const retry = await create({ name: 'Rex', categoryId: 1 }, 'key-1');

    expect(first.status).toBe(201);
    expect(retry.status).toBe(201);
    expect(await retry.text()).toBe(firstBody);
    expect(retry.headers.get('location')).toBe(first.headers.get('location'));
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(await petCount()).toBe(1);
  });

  it('treats the same JSON object laid out differently as the same body', async () => {
    await create('{"name":"Rex","categoryId":1}', 'key-1');

    const retry = await create('{ "categoryId": 1,\n  "name": "Rex" }', 'key-1');

    expect(retry.status).toBe(201);
    expect(await petCount()).toBe(1);
  });

  it('answers 422 idempotency_key_reused for the same key with another body', async () => {
    await create({ name: 'Rex', categoryId: 1 }, 'key-1');

    const reused = await create({ name: 'Tom', categoryId: 1 }, 'key-1');

    expect(reused.status).toBe(422);
    expect(await reused.json()).toEqual({
      code: 'idempotency_key_reused',
      message: expect.stringContaining('Idempotency-Key'),
      status: 422,
    });
    expect(await petCount()).toBe(1);
  });

  it('keeps the keys of two API keys apart', async () => {
    const mine = await readPet(await create({ name: 'Rex', categoryId: 1 }, 'shared-key'));
    const theirs = await readPet(await create({ name: 'Rex', categoryId: 1 }, 'shared-key', OTHER_KEY));

    expect(theirs.id).not.toBe(mine.id);
    expect(await petCount()).toBe(2);
  });

  it('creates exactly one pet for 20 concurrent identical requests; the others get 409 or the replay', async () => {
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => create({ name: 'Rex', categoryId: 1 }, 'burst')),
    );

    const statuses = responses.map((response) => response.status);
    expect(statuses.every((status) => status === 201 || status === 409)).toBe(true);
    expect(statuses).toContain(201);
    const bodies = await Promise.all(responses.map((response) => response.json()));
    const created = bodies.filter((_body, i) => statuses[i] === 201);
    expect(new Set(created.map((body) => JSON.stringify(body))).size).toBe(1);
    for (const [i, body] of bodies.entries()) {
      if (statuses[i] === 409) {
        expect(body).toEqual({
          code: 'idempotency_conflict',
          message: expect.stringContaining('Idempotency-Key'),
          status: 409,
        });
        expect(responses[i]?.headers.get('retry-after')).toBe('1');
      }
    }
    expect(await petCount()).toBe(1);
  });

  it('does not poison the key when the first attempt fails with 5xx', async () => {
    await service.proxy.cut();
    const failed = await create({ name: 'Rex', categoryId: 1 }, 'key-1');
    await service.proxy.restore();

    const retry = await create({ name: 'Rex', categoryId: 1 }, 'key-1');

    expect(failed.status).toBe(503);
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    expect(await petCount()).toBe(1);
  });

  it('lets the client package create through an outage: it retries its key after each 503 until the database is back', async () => {
    const petstore = new PetstoreClient({ baseUrl: `${service.server.url}/v1`, apiKey: TEST_API_KEY });
    await service.proxy.cut();

    const creating = petstore.pets.create({ name: 'Rex', categoryId: 1 });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await service.proxy.restore();

    expect(await creating).toMatchObject({ name: 'Rex' });
    expect(await petCount()).toBe(1);
  });

  it('checks the body first: an invalid body is a 400 even with a key already used', async () => {
    await create({ name: 'Rex', categoryId: 1 }, 'key-1');

    const invalid = await create({ name: '', categoryId: 1 }, 'key-1');
    const retry = await create({ name: 'Rex', categoryId: 1 }, 'key-1');

    expect(invalid.status).toBe(400);
    expect(await invalid.json()).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('name') });
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(await petCount()).toBe(1);
  });

  it('opens no transaction for an invalid body: with the database cut off, it is still a 400', async () => {
    await service.proxy.cut();
    try {
      const invalid = await create({ name: '', categoryId: 1 }, 'key-1');

      expect(invalid.status).toBe(400);
    } finally {
      await service.proxy.restore();
    }
  });

  it('does not keep a 400: the same key works once the body is fixed', async () => {
    expect((await create({ name: '', categoryId: 1 }, 'key-1')).status).toBe(400);

    expect((await create({ name: 'Rex', categoryId: 1 }, 'key-1')).status).toBe(201);
  });

  it('forgets a key after 24 hours', async () => {
    await create({ name: 'Rex', categoryId: 1 }, 'key-1');
    await service.database.dataSource.query(
      `UPDATE idempotency_keys SET created_at = now() - interval '25 hours', expires_at = now() - interval '1 hour'`,
    );

    const later = await create({ name: 'Rex', categoryId: 1 }, 'key-1');

    expect(later.status).toBe(201);
    expect(later.headers.get('idempotent-replayed')).toBeNull();
    expect(await petCount()).toBe(2);
  });

  it.each([
    ['empty', ''],
    ['256 characters long', 'k'.repeat(256)],
    ['with a space', 'my key'],
  ])('answers 400 naming the header when it is %s', async (_case, value) => {
    const response = await create({ name: 'Rex', categoryId: 1 }, value);

    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      code: 'invalid_request',
      message: expect.stringContaining('Idempotency-Key'),
      status: 400,
    });
    expect(await petCount()).toBe(0);
  });

  it('answers 400 for a header that is not ASCII', async () => {
    const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const url = new URL(`${service.server.url}/v1/pets`);
      const request = httpRequest(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          headers: { ...json, 'Idempotency-Key': Buffer.from('clé', 'utf8').toString('latin1') },
        },
        (response) => {
          let text = '';
          response.on('data', (chunk: Buffer) => (text += chunk.toString()));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
        },
      );
      request.on('error', reject);
      request.end(JSON.stringify({ name: 'Rex', categoryId: 1 }));
    });

    expect(status).toBe(400);
    expect(JSON.parse(body)).toEqual({
      code: 'invalid_request',
      message: expect.stringContaining('Idempotency-Key'),
      status: 400,
    });
    expect(await petCount()).toBe(0);
  });

  it('accepts 255 visible ASCII characters', async () => {
    expect((await create({ name: 'Rex', categoryId: 1 }, '~'.repeat(255))).status).toBe(201);
  });

  it('leaves exactly one pet per key after 1,000 creates retried after random client-side timeouts', async () => {
    const keys = Array.from({ length: Number(process.env.IDEMPOTENCY_LOOP ?? 1000) }, (_, i) => `loop-${i}`);
    const counts = { attempts: 0, timedOut: 0, conflicts: 0, replayed: 0 };

    /** Like a client whose first try times out after 0-5 ms: retry with the same key until answered. */
    async function createSafely(key: string): Promise<void> {
      for (let attempt = 0; ; attempt++) {
        counts.attempts++;
        const signal = attempt === 0 ? AbortSignal.timeout(Math.floor(Math.random() * 6)) : undefined;
        const response = await create({ name: key, categoryId: 1 }, key, json, signal).catch(() => null);
        if (response === null) {
          counts.timedOut++;
          continue;
        }
        await response.arrayBuffer();
        if (response.status === 201) {
          if (response.headers.get('idempotent-replayed') === 'true') counts.replayed++;
          return;
        }
        expect(response.status).toBe(409);
        counts.conflicts++;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    }
    // Eight clients at a time, each working through its share of the keys.
    await Promise.all(
      Array.from({ length: 8 }, async (_, worker) => {
        for (let i = worker; i < keys.length; i += 8) await createSafely(keys[i] ?? '');
      }),
    );

    const rows: { name: string; copies: number }[] = await service.database.dataSource.query(
      'SELECT name, count(*)::int AS copies FROM pets GROUP BY name',
    );
    console.log(
      `idempotency loop: ${keys.length} keys, ${JSON.stringify(counts)}, ${rows.length} distinct pets in the database`,
    );
    expect(rows).toHaveLength(keys.length);
    expect(rows.filter((row) => row.copies !== 1)).toEqual([]);
  }, 120_000);
});
