import { TEST_API_KEY, useService } from '../support/server.js';

const service = useService();

const MISSING = { code: 'unauthorized', message: 'Missing API key: send Authorization: Bearer <key>', status: 401 };
const INVALID = { code: 'unauthorized', message: 'Invalid API key', status: 401 };

const operations: [string, string, string | undefined][] = [
  ['GET', '/v1/pets', undefined],
  ['POST', '/v1/pets', JSON.stringify({ name: 'Rex', categoryId: 1 })],
  ['GET', '/v1/pets/1', undefined],
];

async function call(
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<Response> {
  return fetch(`${service.server.url}${path}`, {
    method,
    headers: { 'Content-Type': 'application/json', ...headers },
    body,
  });
}

describe.each(operations)('%s %s', (method, path, body) => {
  it('answers 401 with the Error body and a Bearer challenge when no key is sent', async () => {
    const response = await call(method, path, {}, body);

    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="petstore"');
    expect(await response.json()).toEqual(MISSING);
  });

  it('answers 401 with error="invalid_token" when the key is wrong', async () => {
    const response = await call(method, path, { Authorization: `Bearer ${TEST_API_KEY}x` }, body);

    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="petstore", error="invalid_token"');
    expect(await response.json()).toEqual(INVALID);
  });

  it.each([['Basic dXNlcjpwYXNz'], ['Bearer'], ['Bearer '], [TEST_API_KEY], ['Token abc']])(
    'answers 401 for Authorization: %s',
    async (header) => {
      const response = await call(method, path, { Authorization: header }, body);

      expect(response.status).toBe(401);
      expect(await response.json()).toMatchObject({ code: 'unauthorized', status: 401 });
    },
  );
});

describe('a valid key', () => {
  it('is accepted whatever the case of the scheme name', async () => {
    for (const scheme of ['Bearer', 'bearer', 'BEARER']) {
      expect((await call('GET', '/v1/pets', { Authorization: `${scheme} ${TEST_API_KEY}` })).status).toBe(200);
    }
  });

  it('can be any of the keys in API_KEYS', async () => {
    expect((await call('GET', '/v1/pets', { Authorization: 'Bearer second-test-key-abcdefghijklmnop' })).status).toBe(
      200,
    );
  });
});

// Nest runs Express middleware before guards, so a global body parser would answer these with
// 400/413/415 before authentication. We read the body after the guard instead: without a valid
// key, the caller learns nothing, not even how its body would have been judged.
describe('authentication comes before validation and lookup', () => {
  it.each([
    ['malformed JSON', 'application/json', '{"name":'],
    ['a body over 16 KiB', 'application/json', JSON.stringify({ name: 'x'.repeat(20_000), categoryId: 1 })],
    ['a non-JSON content type', 'text/plain', 'hello'],
    ['invalid fields', 'application/json', JSON.stringify({ name: '', categoryId: 'x' })],
  ])('answers 401, not 400/413/415, to a keyless POST with %s', async (_case, contentType, body) => {
    const response = await fetch(`${service.server.url}/v1/pets`, {
      method: 'POST',
      headers: { 'Content-Type': contentType },
      body,
    });

    expect(response.status).toBe(401);
    expect(await response.json()).toEqual(MISSING);
  });

  it('answers 401, not 404, for a pet that does not exist', async () => {
    const response = await call('GET', '/v1/pets/424242');

    expect(response.status).toBe(401);
  });

  it.each([
    ['GET', '/v1/nowhere'],
    ['GET', '/v1'],
    ['GET', '/v1/pets/1/photos'],
    ['PATCH', '/v1/pets/1'],
  ])('answers 401, not 404 or 405, to a keyless %s %s: no route is looked for without a key', async (method, path) => {
    const response = await call(method, path);

    expect(response.status).toBe(401);
    expect(await response.json()).toEqual(MISSING);
  });

  it('answers 401, not 400, for invalid query parameters', async () => {
    expect((await call('GET', '/v1/pets?limit=0&status=lost')).status).toBe(401);
  });

  it('stores nothing for a keyless create', async () => {
    await call('POST', '/v1/pets', {}, JSON.stringify({ name: 'Sneaky', categoryId: 1 }));

    expect(await service.database.dataSource.query(`SELECT * FROM pets WHERE name = 'Sneaky'`)).toEqual([]);
  });
});

describe('routes that need no key', () => {
  it.each([['/healthz'], ['/readyz'], ['/openapi.json'], ['/openapi.yaml'], ['/docs']])(
    '%s answers 200 without a key',
    async (path) => {
      expect((await fetch(`${service.server.url}${path}`)).status).toBe(200);
    },
  );
});
