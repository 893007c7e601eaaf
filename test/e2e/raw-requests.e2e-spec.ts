import { rawExchange } from '../support/raw-http.js';
import { TEST_API_KEY, useService } from '../support/server.js';

const service = useService();

const get = (target: string, headers: string[] = []) =>
  [`GET ${target} HTTP/1.1`, 'Host: localhost', `Authorization: Bearer ${TEST_API_KEY}`, ...headers, '', ''].join(
    '\r\n',
  );

describe('requests Node answers before any route', () => {
  it('answers an Expect it does not support with 417 and the Error body', async () => {
    const answer = await rawExchange(service.server.url, get('/v1/pets', ['Expect: x']));

    expect(answer.text).toMatch(/^HTTP\/1\.1 417 /);
    expect(answer.text).toContain(
      '{"code":"invalid_request","message":"Expect header: only 100-continue is supported","status":417}',
    );
    expect(answer.closed).toBe(true);
  });

  it('answers an HTTP/1.1 request without Host with 400 and the Error body', async () => {
    const answer = await rawExchange(
      service.server.url,
      `GET /v1/pets HTTP/1.1\r\nAuthorization: Bearer ${TEST_API_KEY}\r\n\r\n`,
    );

    expect(answer.text).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer.text).toMatch(/content-type: application\/json/i);
    expect(answer.text).toContain(
      '{"code":"invalid_request","message":"Host header is required in HTTP/1.1","status":400}',
    );
    expect(answer.closed).toBe(true);
  });

  it('answers CONNECT with 405 and the Error body rather than closing in silence', async () => {
    const answer = await rawExchange(
      service.server.url,
      'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n',
    );

    expect(answer.text).toMatch(/^HTTP\/1\.1 405 /);
    expect(answer.text).toContain('"code":"method_not_allowed"');
    expect(answer.closed).toBe(true);
  });

  it('sends no second, unasked-for answer when garbage follows a finished exchange on the connection', async () => {
    const answer = await rawExchange(service.server.url, `${get('/healthz')}\u0001\u0002 garbage\r\n\r\n`);

    expect(answer.text.match(/HTTP\/1\.1 /g)).toHaveLength(1);
    expect(answer.text).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer.closed).toBe(true);
  });

  it('still answers garbage that opens a connection with 400 and the Error body', async () => {
    const answer = await rawExchange(service.server.url, '\u0001\u0002 garbage\r\n\r\n');

    expect(answer.text).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer.text).toContain('"code":"invalid_request"');
  });
});

describe('paths', () => {
  it.each([['/V1/pets'], ['/v1/PETS'], ['/v1/Pets/1']])(
    'match case exactly: %s is a 404 with the Error body',
    async (path) => {
      const response = await fetch(`${service.server.url}${path}`, {
        headers: { Authorization: `Bearer ${TEST_API_KEY}`, 'If-None-Match': '*' },
      });

      expect(response.status).toBe(404);
      expect(await response.json()).toEqual({ code: 'not_found', message: `No route for GET ${path}`, status: 404 });
    },
  );
});

// The routes answer a request in absolute form (`GET http://host/v1/pets`) as they answer its path:
// authentication must read the same path, or such a request would reach a route without a key.
describe('a request target in absolute form', () => {
  const absolute = (headers: string[]) =>
    ['GET http://localhost/v1/pets HTTP/1.1', 'Host: localhost', ...headers, '', ''].join('\r\n');

  it('needs a key like its path: 401 without one', async () => {
    const answer = await rawExchange(service.server.url, absolute(['Connection: close']));

    expect(answer.text).toMatch(/^HTTP\/1\.1 401 /);
    expect(answer.text).toContain('{"code":"unauthorized","message":"Missing API key');
  });

  it('is answered as its path with a key: 200 and a page', async () => {
    const answer = await rawExchange(
      service.server.url,
      absolute([`Authorization: Bearer ${TEST_API_KEY}`, 'Connection: close']),
    );

    expect(answer.text).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer.text).toMatch(/\r\n\r\n\[/);
  });
});
