import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { answerNodeProtocol, requireHostHeader } from '../../../../../src/interface/http/platform/node-protocol.js';
import { rawExchange } from '../../../../support/raw-http.js';

// A bare Node server with only the protocol handling: what Node would answer on its own before
// any route now carries the Error body, whatever sits behind it.
let server: Server;
let url: string;
const routed: string[] = [];

beforeAll(async () => {
  server = createServer({ requireHostHeader: false }, (request: IncomingMessage, response: ServerResponse) =>
    requireHostHeader(request, response, () => {
      routed.push(`${request.method} ${request.url}`);
      response.end('routed');
    }),
  );
  answerNodeProtocol(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
beforeEach(() => (routed.length = 0));

const bodyOf = (text: string): unknown => JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));

describe('answerNodeProtocol', () => {
  it('answers a request the parser refuses with a 400 Error body, and closes', async () => {
    const { text, closed } = await rawExchange(url, 'GET /\u0001 HTTP/1.1\r\nHost: x\r\n\r\n');

    expect(text).toMatch(/^HTTP\/1\.1 400 /);
    expect(text).toContain('Content-Type: application/json');
    expect(bodyOf(text)).toEqual({ code: 'invalid_request', message: 'Malformed HTTP request', status: 400 });
    expect(closed).toBe(true);
    expect(routed).toEqual([]);
  });

  it('answers a header section over 16 KiB with 431', async () => {
    const { text } = await rawExchange(url, `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);

    expect(text).toMatch(/^HTTP\/1\.1 431 /);
    expect(bodyOf(text)).toMatchObject({ status: 431 });
  });

  it('refuses CONNECT with 405 method_not_allowed', async () => {
    const { text } = await rawExchange(url, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');

    expect(text).toMatch(/^HTTP\/1\.1 405 /);
    expect(bodyOf(text)).toEqual({ code: 'method_not_allowed', message: 'CONNECT is not supported', status: 405 });
  });

  it('answers an Expect other than 100-continue with 417', async () => {
    const { text } = await rawExchange(url, 'GET / HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\n\r\n');

    expect(text).toMatch(/^HTTP\/1\.1 417 /);
    expect(bodyOf(text)).toMatchObject({ status: 417, message: expect.stringContaining('Expect') });
  });

  it('hands Expect: 100-continue to the route without sending 100 Continue first', async () => {
    const { text } = await rawExchange(
      url,
      'POST /pets HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\nConnection: close\r\n\r\n',
    );

    expect(text).not.toContain('100 Continue');
    expect(text).toMatch(/^HTTP\/1\.1 200 /);
    expect(routed).toEqual(['POST /pets']);
  });
});

describe('requireHostHeader', () => {
  it('answers an HTTP/1.1 request without Host with a 400 Error body and Connection: close', async () => {
    const { text } = await rawExchange(url, 'GET / HTTP/1.1\r\n\r\n');

    expect(text).toMatch(/^HTTP\/1\.1 400 /);
    expect(text).toMatch(/connection: close/i);
    expect(bodyOf(text)).toEqual({
      code: 'invalid_request',
      message: 'Host header is required in HTTP/1.1',
      status: 400,
    });
    expect(routed).toEqual([]);
  });

  it('lets an HTTP/1.0 request without Host through', async () => {
    const { text } = await rawExchange(url, 'GET /old HTTP/1.0\r\n\r\n');

    expect(text).toMatch(/^HTTP\/1\.1 200 /);
    expect(routed).toEqual(['GET /old']);
  });
});
