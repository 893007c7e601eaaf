import { expect } from '@jest/globals';
import { PetstoreClient, type PetStatus } from '../../packages/client/src/index.js';
import { readPet, readPets } from '../support/http.js';
import { authorized, json, TEST_API_KEY, useService } from '../support/server.js';

const service = useService();

// The client package for ordinary calls; raw fetch where the test looks at the protocol itself.
const petstore = () =>
  new PetstoreClient({ baseUrl: `${service.server.url}/v1`, apiKey: TEST_API_KEY, onDeprecation: () => {} });

async function create(body: unknown): Promise<Response> {
  return fetch(`${service.server.url}/v1/pets`, { method: 'POST', headers: json, body: JSON.stringify(body) });
}

async function createMany(count: number, status?: PetStatus): Promise<number[]> {
  const client = petstore();
  const ids: number[] = [];
  for (let i = 0; i < count; i++)
    ids.push((await client.pets.create({ name: `pet ${i}`, categoryId: 1, ...(status ? { status } : {}) })).id);
  return ids;
}

/** Follows Link rel="next" from `path` to the last page; returns every id seen, and the Link headers. */
async function walk(path: string): Promise<{ ids: number[]; links: string[] }> {
  const ids: number[] = [];
  const links: string[] = [];
  let next: string | null = path;
  while (next !== null) {
    const response: Response = await fetch(`${service.server.url}${next}`, { headers: authorized });
    expect(response.status).toBe(200);
    ids.push(...(await readPets(response)).map((pet) => pet.id));
    const link = response.headers.get('link');
    if (link !== null) links.push(link);
    next = link === null ? null : (/^<([^>]+)>; rel="next"$/.exec(link)?.[1] ?? 'unparseable link');
  }
  return { ids, links };
}

describe('POST /v1/pets', () => {
  it('creates a pet: 201, the Pet with its id, and Location', async () => {
    const response = await create({ name: 'Rex', categoryId: 7, status: 'pending' });

    expect(response.status).toBe(201);
    const pet = await readPet(response);
    expect(pet).toEqual({ id: expect.any(Number), name: 'Rex', categoryId: 7, status: 'pending' });
    expect(response.headers.get('location')).toBe(`/v1/pets/${pet.id}`);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  });

  it('gives a pet created without status the status "available"', async () => {
    const pet = await readPet(await create({ name: 'Tom', categoryId: 1 }));

    expect(pet.status).toBe('available');
    expect(await (await fetch(`${service.server.url}/v1/pets/${pet.id}`, { headers: authorized })).json()).toEqual(pet);
  });

  it('accepts application/json with a charset parameter', async () => {
    const response = await fetch(`${service.server.url}/v1/pets`, {
      method: 'POST',
      headers: { ...authorized, 'Content-Type': 'application/json; charset=utf-8' },
      body: JSON.stringify({ name: 'Zoë 🐕', categoryId: 9007199254740991 }),
    });

    expect(response.status).toBe(201);
    expect(await response.json()).toMatchObject({ name: 'Zoë 🐕', categoryId: 9007199254740991 });
  });

  it.each([
    ["O'Brien"],
    ['Renée'],
    ['Rex Jr.'],
    ['\u{1f408}\u200d\u2b1b'], // black cat: a ZERO WIDTH JOINER between two emoji
    ['\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645'], // Persian, with ZERO WIDTH NON-JOINER
    ['\u{1f3f4}\u{e0067}\u{e0062}\u{e0073}\u{e0063}\u{e0074}\u{e007f}'], // flag of Scotland: tag characters
  ])('keeps the name %j exactly as it was sent', async (name) => {
    const client = petstore();
    const pet = await client.pets.create({ name, categoryId: 1 });

    expect(pet.name).toBe(name);
    expect(await client.pets.get(pet.id)).toEqual(pet);
  });
});

describe('GET /v1/pets', () => {
  it('lists pets in ascending id order', async () => {
    const ids = await createMany(3);

    const response = await fetch(`${service.server.url}/v1/pets`, { headers: authorized });

    expect(response.status).toBe(200);
    expect((await readPets(response)).map((pet) => pet.id)).toEqual(ids);
    expect(response.headers.get('link')).toBeNull();
  });

  it('returns 20 pets by default, with a link to the next page', async () => {
    await createMany(21);

    const response = await fetch(`${service.server.url}/v1/pets`, { headers: authorized });

    expect(await response.json()).toHaveLength(20);
    expect(response.headers.get('link')).toMatch(/^<\/v1\/pets\?limit=20&cursor=[^>]+>; rel="next"$/);
  });

  it('pages through every pet exactly once with Link rel="next", and the last page has no link', async () => {
    const ids = await createMany(7);

    const { ids: seen, links } = await walk('/v1/pets?limit=3');

    expect(seen).toEqual(ids);
    expect(links).toHaveLength(2);
    for (const link of links) expect(link).toMatch(/^<\/v1\/pets\?limit=3&cursor=/);
  });

  it('gives no next link when the last page is exactly full', async () => {
    await createMany(4);

    const { links } = await walk('/v1/pets?limit=2');

    expect(links).toHaveLength(1);
  });

  it('filters by status, and the next link repeats the status', async () => {
    const available = await createMany(2);
    const sold = await createMany(3, 'sold');
    await createMany(1);

    const { ids, links } = await walk('/v1/pets?status=sold&limit=2');

    expect(ids).toEqual(sold);
    expect(links).toEqual([expect.stringMatching(/^<\/v1\/pets\?limit=2&status=sold&cursor=[^>]+>; rel="next"$/)]);
    expect(ids).not.toContain(available[0]);
  });

  it('ignores unknown query parameters', async () => {
    await createMany(2);

    const response = await fetch(`${service.server.url}/v1/pets?limit=1&foo=bar`, { headers: authorized });

    expect(response.status).toBe(200);
    expect(await response.json()).toHaveLength(1);
  });

  it('refuses a cursor the service did not issue', async () => {
    const response = await fetch(
      `${service.server.url}/v1/pets?cursor=${Buffer.from('1.5.').toString('base64url')}.abc`,
      { headers: authorized },
    );

    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      code: 'invalid_request',
      message: expect.stringContaining('cursor'),
      status: 400,
    });
  });

  it.each([
    ['limit=0'],
    ['limit=101'],
    ['limit=abc'],
    ['limit=5.5'],
    ['limit=-1'],
    ['status=lost'],
    ['limit=1&limit=2'],
    ['status=sold&status=sold'],
  ])('answers 400 naming the parameter for ?%s', async (query) => {
    const response = await fetch(`${service.server.url}/v1/pets?${query}`, { headers: authorized });

    expect(response.status).toBe(400);
    const parameter = query.split('=')[0] ?? '';
    expect(await response.json()).toEqual({
      code: 'invalid_request',
      message: expect.stringContaining(parameter),
      status: 400,
    });
  });
});

describe('GET /v1/pets/{petId} (deprecated)', () => {
  it('returns the pet with Sunset and Deprecation headers', async () => {
    const [id] = await createMany(1);

    const response = await fetch(`${service.server.url}/v1/pets/${id}`, { headers: authorized });

    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ id, name: 'pet 0', categoryId: 1, status: 'available' });
    expect(response.headers.get('sunset')).toBe('Thu, 05 Dec 2030 00:00:00 GMT');
    expect(response.headers.get('deprecation')).toMatch(/^@\d+$/);
  });

  it.each([
    ['424242'],
    ['0'],
    ['-1'],
    ['abc'],
    ['1.5'],
    ['9007199254740992'],
    ['99999999999999999999'],
    ['%F0%9F%90%95'],
  ])('answers 404 not_found, still with Sunset and Deprecation, for petId %s', async (petId) => {
    const response = await fetch(`${service.server.url}/v1/pets/${petId}`, { headers: authorized });

    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({
      code: 'not_found',
      message: expect.stringContaining('does not exist'),
      status: 404,
    });
    expect(response.headers.get('sunset')).toBe('Thu, 05 Dec 2030 00:00:00 GMT');
    expect(response.headers.get('deprecation')).toBe('@1795219200');
  });
});

describe('methods the resource does not have', () => {
  it.each([
    ['DELETE', '/v1/pets', 'GET, POST'],
    ['PUT', '/v1/pets/1', 'GET'],
    ['PATCH', '/v1/pets/1', 'GET'],
  ])('answers %s %s with 405 and Allow', async (method, path, allow) => {
    const response = await fetch(`${service.server.url}${path}`, { method, headers: authorized });

    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe(allow);
    expect(await response.json()).toEqual({
      code: 'method_not_allowed',
      message: expect.stringContaining('GET'),
      status: 405,
    });
  });
});
