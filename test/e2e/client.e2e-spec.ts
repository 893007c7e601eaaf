import { PetstoreClient, PetstoreError, type DeprecationNotice } from '../../packages/client/src/index.js';
import { TEST_API_KEY, useService } from '../support/server.js';

// The client package (packages/client) against the real service. Its types come from
// docs/openapi.json, so a change of the document that breaks clients breaks the type check of this
// file; every answer it receives is also checked against the document (test/support/contract.ts).
const service = useService();

function client(options: Partial<ConstructorParameters<typeof PetstoreClient>[0]> = {}): PetstoreClient {
  return new PetstoreClient({ baseUrl: `${service.server.url}/v1`, apiKey: TEST_API_KEY, ...options });
}

async function petCount(): Promise<number> {
  const rows: { n: number }[] = await service.database.dataSource.query('SELECT count(*)::int AS n FROM pets');
  return Number(rows[0]?.n);
}

describe('the client package against the service', () => {
  it('pets.create: adds a pet and returns the typed Pet', async () => {
    const pet = await client().pets.create({ name: 'Rex', categoryId: 7, status: 'pending' });

    expect(pet).toEqual({ id: expect.any(Number), name: 'Rex', categoryId: 7, status: 'pending' });
  });

  it('pets.list: yields every pet, page after page, and only those of the status asked for', async () => {
    const petstore = client({ pageSize: 4 });
    const created = [];
    for (let i = 0; i < 11; i++)
      created.push(
        await petstore.pets.create({ name: `pet ${i}`, categoryId: 1, status: i % 3 ? 'available' : 'sold' }),
      );

    const all = [];
    for await (const pet of petstore.pets.list()) all.push(pet);
    const sold = [];
    for await (const pet of petstore.pets.list({ status: 'sold', pageSize: 2 })) sold.push(pet.id);

    expect(all).toEqual(created);
    expect(sold).toEqual(created.filter((pet) => pet.status === 'sold').map((pet) => pet.id));
    expect(sold).toHaveLength(4);
  });

  it('pets.create: when the answer is lost, the retry carries the same Idempotency-Key and the pet is stored once', async () => {
    const keys: (string | null)[] = [];
    const petstore = client({
      retry: { baseDelayMs: 10 },
      // The service answers the first attempt, but the client never sees that answer.
      fetch: async (request) => {
        keys.push(request.headers.get('idempotency-key'));
        const response = await fetch(request);
        if (keys.length === 1) throw new TypeError('connection reset after the request was sent');
        return response;
      },
    });

    const pet = await petstore.pets.create({ name: 'Lost Answer', categoryId: 1 });

    expect(keys).toHaveLength(2);
    expect(keys[1]).toBe(keys[0]);
    expect(pet.name).toBe('Lost Answer');
    expect(await petCount()).toBe(1);
  });

  it('pets.get: returns the pet, and warns once per client that getPet is deprecated', async () => {
    const notices: DeprecationNotice[] = [];
    const petstore = client({ onDeprecation: (notice) => notices.push(notice) });
    const created = await petstore.pets.create({ name: 'Tom', categoryId: 2 });

    expect(await petstore.pets.get(created.id)).toEqual(created);
    await petstore.pets.get(created.id);

    expect(notices).toEqual([
      { operation: 'getPet', deprecation: '@1795219200', sunset: 'Thu, 05 Dec 2030 00:00:00 GMT' },
    ]);
  });

  it('turns every non-2xx into a PetstoreError with code, message, status and request id', async () => {
    const petstore = client({ onDeprecation: () => {} });

    const invalid = await petstore.pets.create({ name: ' ', categoryId: 1 }).catch((error: unknown) => error);
    const missing = await petstore.pets.get(424242).catch((error: unknown) => error);
    const unauthorized = await client({ apiKey: 'wrong' })
      .pets.create({ name: 'Rex', categoryId: 1 })
      .catch((error: unknown) => error);

    expect(invalid).toBeInstanceOf(PetstoreError);
    expect(invalid).toMatchObject({ code: 'invalid_request', status: 400, message: expect.stringContaining('name') });
    expect((invalid as PetstoreError).requestId).toMatch(/^\S+$/);
    expect(missing).toMatchObject({ code: 'not_found', status: 404 });
    expect(unauthorized).toMatchObject({ code: 'unauthorized', status: 401 });
    expect(await petCount()).toBe(0);
  });

  it("stops at the caller's AbortSignal", async () => {
    const controller = new AbortController();
    controller.abort();

    await expect(
      client().pets.create({ name: 'Rex', categoryId: 1 }, { signal: controller.signal }),
    ).rejects.toMatchObject({ name: 'AbortError' });
    expect(await petCount()).toBe(0);
  });
});
