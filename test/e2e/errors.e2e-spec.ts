import { expect } from '@jest/globals';
import { connect } from 'node:net';
import { authorized, json, useService } from '../support/server.js';

const service = useService();

async function post(body: string, headers: Record<string, string> = json): Promise<Response> {
  return fetch(`${service.server.url}/v1/pets`, { method: 'POST', headers, body });
}

async function expectError(response: Response, status: number, code: string, message: string | RegExp): Promise<void> {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  expect(await response.json()).toEqual({
    code,
    message: typeof message === 'string' ? expect.stringContaining(message) : expect.stringMatching(message),
    status,
  });
}

describe('400 invalid_request on createPet', () => {
  it('names every offending field in one message', async () => {
    const response = await post(JSON.stringify({ name: '   ', categoryId: 5.5, status: 'lost', categoryID: 3 }));

    await expectError(response, 400, 'invalid_request', /name.*categoryId.*status/);
    expect(await service.database.dataSource.query('SELECT count(*)::int AS n FROM pets')).toEqual([{ n: 0 }]);
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
    ['an id', { id: 1, name: 'Rex', categoryId: 1 }, '"id" is not a known field'],
    ['a typo', { name: 'Rex', categoryID: 1 }, '"categoryID" is not a known field'],
  ])('refuses %s', async (_case, body, field) => {
    await expectError(await post(JSON.stringify(body)), 400, 'invalid_request', field);
  });

  it.each([
    ['a zero-width space', '\u200b', 'U+200B at character 1'],
    ['a Hangul filler', '\u3164', 'U+3164 at character 1'],
    ['a right-to-left override', '\u202egnp.exe', 'U+202E at character 1'],
    ['CR LF', 'Rex\r\nX-Admin: 1', 'U+000D at character 4'],
    ['a tab', 'Rex\tJr.', 'U+0009 at character 4'],
    ['a leading joiner', '\u200dRex', 'U+200D at character 1'],
    ['only spaces', ' \u3000 ', 'at least one visible character'],
  ])('refuses a name with %s, naming the character', async (_case, name, where) => {
    const response = await post(JSON.stringify({ name, categoryId: 1 }));

    await expectError(response, 400, 'invalid_request', where);
    expect(await service.database.dataSource.query('SELECT count(*)::int AS n FROM pets')).toEqual([{ n: 0 }]);
  });

  it('refuses a lone surrogate in the name instead of storing something else', async () => {
    await expectError(await post('{"name":"\\ud800","categoryId":1}'), 400, 'invalid_request', 'name');
  });

  it('refuses __proto__ keys without polluting anything', async () => {
    await expectError(
      await post('{"name":"Rex","categoryId":1,"__proto__":{"admin":true}}'),
      400,
      'invalid_request',
      '__proto__',
    );
    await expectError(
      await post('{"name":"Rex","categoryId":1,"constructor":{"prototype":{"x":1}}}'),
      400,
      'invalid_request',
      'constructor',
    );
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
    expect(await service.database.dataSource.query('SELECT count(*)::int AS n FROM pets')).toEqual([{ n: 0 }]);
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

describe('hostile bodies found by the fuzz test', () => {
  const nested = (depth: number) => `{"name":${'['.repeat(depth)}${']'.repeat(depth)},"categoryId":1}`;

  it.each([[null], ['key-1']])(
    'answers 400, not 500, for a body nested thousands of levels deep (Idempotency-Key: %s)',
    async (idempotencyKey) => {
      const headers = idempotencyKey === null ? json : { ...json, 'Idempotency-Key': idempotencyKey };

      await expectError(await post(nested(3000), headers), 400, 'invalid_request', 'nested more than 32 levels');
      await expectError(
        await post(`{"x":${'['.repeat(3000)}${']'.repeat(3000)}}`, headers),
        400,
        'invalid_request',
        'nested',
      );
    },
  );

  it('answers 415 for UTF-16 and UTF-7 bodies instead of decoding them', async () => {
    const body = '{"name":"Rex+AOk-","categoryId":1}';
    await expectError(
      await post(body, { ...authorized, 'Content-Type': 'application/json; charset=utf-7' }),
      415,
      'unsupported_media_type',
      'charset',
    );
    await expectError(
      await post(body, { ...authorized, 'Content-Type': 'application/json; charset=UTF-16LE' }),
      415,
      'unsupported_media_type',
      'charset',
    );
    expect(
      (
        await post('{"name":"Rex","categoryId":1}', {
          ...authorized,
          'Content-Type': 'application/json; charset="UTF-8"',
        })
      ).status,
    ).toBe(201);
  });

  it('answers 400 for a body that is not valid UTF-8, instead of storing U+FFFD', async () => {
    const response = await fetch(`${service.server.url}/v1/pets`, {
      method: 'POST',
      headers: json,
      body: Buffer.from([...Buffer.from('{"name":"R'), 0xff, 0xc0, ...Buffer.from('x","categoryId":1}')]),
    });

    await expectError(response, 400, 'invalid_request', 'UTF-8');
    expect(await service.database.dataSource.query('SELECT count(*)::int AS n FROM pets')).toEqual([{ n: 0 }]);
  });

  it.each([
    ['an unknown method', 'FOO /v1/pets HTTP/1.1\r\nHost: x\r\n\r\n', 400],
    ['a raw byte not allowed in a path', 'GET /v1/pets/\xe9 HTTP/1.1\r\nHost: x\r\n\r\n', 400],
    [
      'two different Content-Length headers',
      'POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n{}',
      400,
    ],
    ['a header section over 16 KiB', `GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Huge: ${'h'.repeat(20_000)}\r\n\r\n`, 431],
  ])('answers %s, refused by Node before any route, with the Error body', async (_case, raw, status) => {
    const answer = await new Promise<string>((resolve, reject) => {
      const url = new URL(service.server.url);
      const socket = connect(Number(url.port), url.hostname, () => socket.end(Buffer.from(raw, 'latin1')));
      let received = '';
      socket.on('data', (chunk) => (received += chunk.toString()));
      socket.on('end', () => resolve(received));
      socket.on('error', reject);
    });

    const [head = '', body = ''] = answer.split('\r\n\r\n');
    expect(head).toMatch(new RegExp(`^HTTP/1.1 ${status} `));
    expect(head).toContain('Content-Type: application/json');
    expect(JSON.parse(body)).toEqual({ code: 'invalid_request', message: expect.any(String), status });
  });

  it('sends no ETag, so conditional requests never turn into 304s', async () => {
    const response = await fetch(`${service.server.url}/v1/pets`, {
      headers: { ...authorized, 'If-None-Match': '*', 'If-Modified-Since': new Date().toUTCString() },
    });

    expect(response.status).toBe(200);
    expect(response.headers.get('etag')).toBeNull();
  });

  it('answers a failed precondition on a Swagger UI file with a JSON Error body', async () => {
    const response = await fetch(`${service.server.url}/docs/swagger-ui.css`, { headers: { 'If-Match': '"nope"' } });

    expect(response.status).toBe(412);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await response.json()).toEqual({ code: 'invalid_request', message: expect.any(String), status: 412 });
  });
});

describe('413 and 415 on createPet', () => {
  it('answers 413 payload_too_large for a body over 16 KiB, and stores nothing', async () => {
    await expectError(
      await post(JSON.stringify({ name: 'Rex', categoryId: 1, pad: 'x'.repeat(17_000) })),
      413,
      'payload_too_large',
      '16 KiB',
    );
    expect(await service.database.dataSource.query('SELECT count(*)::int AS n FROM pets')).toEqual([{ n: 0 }]);
  });

  it('reads a body just under 16 KiB (then judges its fields)', async () => {
    await expectError(
      await post(JSON.stringify({ name: 'Rex', categoryId: 1, pad: 'x'.repeat(16_000) })),
      400,
      'invalid_request',
      '"pad" is not a known field',
    );
  });

  it.each([
    ['text/plain'],
    ['application/x-www-form-urlencoded'],
    ['application/jsonx'],
    ['multipart/form-data; boundary=x'],
  ])('answers 415 unsupported_media_type for Content-Type %s', async (contentType) => {
    await expectError(
      await post('{"name":"Rex","categoryId":1}', { ...authorized, 'Content-Type': contentType }),
      415,
      'unsupported_media_type',
      'application/json',
    );
  });

  it('answers 415 for a body without Content-Type', async () => {
    await expectError(
      await post('{"name":"Rex","categoryId":1}', { ...authorized, 'Content-Type': '' }),
      415,
      'unsupported_media_type',
      'application/json',
    );
  });

  it('answers 415 for a charset JSON cannot be read in', async () => {
    await expectError(
      await post('{"name":"Rex","categoryId":1}', {
        ...authorized,
        'Content-Type': 'application/json; charset=latin1',
      }),
      415,
      'unsupported_media_type',
      'charset',
    );
  });
});

describe('any path', () => {
  it.each([
    ['GET', '/nope'],
    ['GET', '/v1/nope'],
    ['POST', '/v1/pets/1/photos'],
    ['GET', '/v2/pets'],
    ['GET', '/healthz/x'],
    ['POST', '/healthz'],
    ['GET', '/v1/healthz'],
  ])('answers %s %s with 404 not_found as JSON, naming the path as sent', async (method, path) => {
    await expectError(
      await fetch(`${service.server.url}${path}?q=1`, { method, headers: authorized }),
      404,
      'not_found',
      `No route for ${method} ${path}`,
    );
  });

  it('answers a path that is not valid percent-encoding with a 400 Error body', async () => {
    await expectError(
      await fetch(`${service.server.url}/v1/pets/%E0%A4%A`, { headers: authorized }),
      400,
      'invalid_request',
      'percent-encoded',
    );
  });

  it('does not announce the framework', async () => {
    expect(
      (await fetch(`${service.server.url}/v1/pets`, { headers: authorized })).headers.get('x-powered-by'),
    ).toBeNull();
  });
});
