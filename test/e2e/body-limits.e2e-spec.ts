import { rawExchange } from '../support/raw-http.js';
import { TEST_API_KEY, useService } from '../support/server.js';

const service = useService();

function post(headers: string[], body = ''): string {
  return [`POST /v1/pets HTTP/1.1`, `Host: localhost`, ...headers, '', body].join('\r\n');
}

const auth = `Authorization: Bearer ${TEST_API_KEY}`;
const json = 'Content-Type: application/json';

describe('an oversized body', () => {
  it('is refused with 413 as soon as its Content-Length says so, without reading it, and the connection closed', async () => {
    const answer = await rawExchange(service.server.url, post([auth, json, 'Content-Length: 524288000'], '{"name":'));

    expect(answer.text).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer.text).toContain('"code":"payload_too_large"');
    expect(answer.text).toMatch(/\r\nConnection: close\r\n/i);
    expect(answer.closed).toBe(true);
    expect(answer.ms).toBeLessThan(1000);
  });

  it('gets no 100 Continue when it asks for one: the 413 comes first', async () => {
    const answer = await rawExchange(
      service.server.url,
      post([auth, json, 'Content-Length: 99999999', 'Expect: 100-continue']),
    );

    expect(answer.text).not.toContain('100 Continue');
    expect(answer.text).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer.closed).toBe(true);
  });

  it('is cut off once it passes 16 KiB when sent in chunks, and the connection closed', async () => {
    const chunk = `4000\r\n${'x'.repeat(0x4000)}\r\n`;
    const answer = await rawExchange(
      service.server.url,
      post([auth, json, 'Transfer-Encoding: chunked'], `${chunk}${chunk}`),
    );

    expect(answer.text).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer.closed).toBe(true);
  });

  it('without a key is a 401, and the rest of the body is not read: the connection closes', async () => {
    const answer = await rawExchange(service.server.url, post([json, 'Content-Length: 524288000'], '{"name":'));

    expect(answer.text).toMatch(/^HTTP\/1\.1 401 /);
    expect(answer.closed).toBe(true);
    expect(answer.ms).toBeLessThan(1000);
  });
});

describe('Expect: 100-continue on a body of allowed size', () => {
  it('gets 100 Continue, then the 201 once the body is sent', async () => {
    const body = JSON.stringify({ name: 'Rex', categoryId: 1 });
    const answer = await rawExchange(
      service.server.url,
      post([auth, json, `Content-Length: ${body.length}`, 'Expect: 100-continue', 'Connection: close']),
      {
        then: (text) => (text.startsWith('HTTP/1.1 100 Continue') ? body : null),
      },
    );

    expect(answer.text).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 201 /);
  });
});
