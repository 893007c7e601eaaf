import { openTestDatabase, type TestDatabase } from '../support/database.js';
import { authorized, json, startServer, type TestServer } from '../support/server.js';

let database: TestDatabase;
let server: TestServer;

beforeAll(async () => {
  database = await openTestDatabase();
  server = await startServer(database.dataSource);
});
afterAll(async () => {
  await server?.close();
  await database?.close();
});
beforeEach(async () => {
  await database.reset();
});

async function post(body: string, headers: Record<string, string> = json): Promise<Response> {
  return fetch(`${server.url}/v1/pets`, { method: 'POST', headers, body });
}

async function expectError(response: Response, status: number, code: string, message: string | RegExp): Promise<void> {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  expect(await response.json()).toEqual({ code, message: typeof message === 'string' ? expect.stringContaining(message) : expect.stringMatching(message), status });
}

describe('400 invalid_request on createPet', () => {
  it('names every offending field in one message', async () => {
    const response = await post(JSON.stringify({ name: '   ', categoryId: 5.5, status: 'lost', categoryID: 3 }));

    await expectError(response, 400, 'invalid_request', /name.*categoryId.*status/);
    expect(await database.dataSource.query('SELECT count(*)::int AS n FROM pets')).toEqual([{ n: 0 }]);
  });

  it.each([
    ['missing name', { categoryId: 1 }, 'name'],
    ['missing categoryId', { name: 'Rex' }, 'categoryId'],
    ['categoryId as a string', { name: 'Rex', categoryId: '5' }, 'categoryId'],
    ['categoryId true', { name: 'Rex', categoryId: true }, 'categoryId'],
    ['categoryId null', { name: 'Rex', categoryId: null }, 'categoryId'],
    ['categoryId beyond 2^53-1', { name: 'Rex', categoryId: 9007199254740992 }, 'categoryId'],
    ['categoryId 0', { name: 'Rex', categoryId: 0 }, 'categoryId'],
    ['status null', { name: 'Rex', categoryId: 1, status: null }, 'status'],
    ['name of 256 characters', { name: 'x'.repeat(256), categoryId: 1 }, 'name'],
    ['name as an object', { name: { first: 'Rex' }, categoryId: 1 }, 'name'],
    ['name as an array', { name: ['Rex'], categoryId: 1 }, 'name'],
    ['name with NUL', { name: 'Re\u0000x', categoryId: 1 }, 'name'],
    ['an id', { id: 1, name: 'Rex', categoryId: 1 }, 'id is not a known field'],
    ['a typo', { name: 'Rex', categoryID: 1 }, 'categoryID is not a known field'],
  ])('refuses %s', async (_case, body, field) => {
    await expectError(await post(JSON.stringify(body)), 400, 'invalid_request', field);
  });

  it('refuses a lone surrogate in the name instead of storing something else', async () => {
    await expectError(await post('{"name":"\\ud800","categoryId":1}'), 400, 'invalid_request', 'name');
  });

  it('refuses __proto__ keys without polluting anything', async () => {
    await expectError(await post('{"name":"Rex","categoryId":1,"__proto__":{"admin":true}}'), 400, 'invalid_request', '__proto__');
    await expectError(await post('{"name":"Rex","categoryId":1,"constructor":{"prototype":{"x":1}}}'), 400, 'invalid_request', 'constructor');
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
    expect(await database.dataSource.query('SELECT count(*)::int AS n FROM pets')).toEqual([{ n: 0 }]);
  });

  it.each([
    ['malformed JSON', '{"name":', 'not valid JSON'],
    ['an array', '[{"name":"Rex","categoryId":1}]', 'JSON object'],
    ['a string', '"Rex"', 'JSON object'],
    ['null', 'null', 'JSON object'],
    ['an empty body', '', 'JSON object'],
  ])('refuses %s as the body', async (_case, body, message) => {
    await expectError(await post(body), 400, 'invalid_request', message);
  });
});

describe('413 and 415 on createPet', () => {
  it('answers 413 payload_too_large for a body over 16 KiB, and stores nothing', async () => {
    await expectError(await post(JSON.stringify({ name: 'Rex', categoryId: 1, pad: 'x'.repeat(17_000) })), 413, 'payload_too_large', '16 KiB');
    expect(await database.dataSource.query('SELECT count(*)::int AS n FROM pets')).toEqual([{ n: 0 }]);
  });

  it('reads a body just under 16 KiB (then judges its fields)', async () => {
    await expectError(await post(JSON.stringify({ name: 'Rex', categoryId: 1, pad: 'x'.repeat(16_000) })), 400, 'invalid_request', 'pad is not a known field');
  });

  it.each([['text/plain'], ['application/x-www-form-urlencoded'], ['application/jsonx'], ['multipart/form-data; boundary=x']])(
    'answers 415 unsupported_media_type for Content-Type %s',
    async (contentType) => {
      await expectError(await post('{"name":"Rex","categoryId":1}', { ...authorized, 'Content-Type': contentType }), 415, 'unsupported_media_type', 'application/json');
    },
  );

  it('answers 415 for a body without Content-Type', async () => {
    await expectError(await post('{"name":"Rex","categoryId":1}', { ...authorized, 'Content-Type': '' }), 415, 'unsupported_media_type', 'application/json');
  });

  it('answers 415 for a charset JSON cannot be read in', async () => {
    await expectError(await post('{"name":"Rex","categoryId":1}', { ...authorized, 'Content-Type': 'application/json; charset=latin1' }), 415, 'unsupported_media_type', 'charset');
  });
});

describe('any path', () => {
  it.each([['GET', '/nope'], ['GET', '/v1/nope'], ['POST', '/v1/pets/1/photos'], ['GET', '/v2/pets'], ['GET', '/healthz/x'], ['POST', '/healthz']])(
    'answers %s %s with 404 not_found as JSON',
    async (method, path) => {
      await expectError(await fetch(`${server.url}${path}`, { method, headers: authorized }), 404, 'not_found', 'No route');
    },
  );

  it('answers a path that is not valid percent-encoding with a 400 Error body', async () => {
    await expectError(await fetch(`${server.url}/v1/pets/%E0%A4%A`, { headers: authorized }), 400, 'invalid_request', 'percent-encoded');
  });

  it('does not announce the framework', async () => {
    expect((await fetch(`${server.url}/v1/pets`, { headers: authorized })).headers.get('x-powered-by')).toBeNull();
  });
});
