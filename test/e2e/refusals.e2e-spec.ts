import { Agent, request } from 'node:http';
import { Writable } from 'node:stream';
import { FlexibleRateLimits } from '../../src/infrastructure/platform/rate-limits/flexible-rate-limits.js';
import { RefusedRequestsLog } from '../../src/interface/http/platform/refused-requests-log.js';
import { openTestDatabase, type TestDatabase } from '../support/database.js';
import { authorized, startServer, TEST_API_KEY, type TestServer } from '../support/server.js';

// What a refused request is answered (head and body, as they were when a guard refused them), how
// it is counted in the metrics and in the request log. One server for the file (nestjs-pino keeps
// the first app's logger for the process); each test sends from its own loopback address, so the
// failed-authentication counts (2 a minute here) do not carry from one test to the next.
const FAILURES_PER_MINUTE = 2;

let database: TestDatabase;
let server: TestServer;
let logged = '';

beforeAll(async () => {
  database = await openTestDatabase();
  const log = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logged += chunk.toString();
      done();
    },
  });
  const rateLimits = new FlexibleRateLimits(
    { perKeyPerMinute: 100, failedAuthenticationsPerMinute: FAILURES_PER_MINUTE },
    null,
  );
  server = await startServer(database, { log, rateLimits });
});
afterAll(async () => {
  await server?.close();
  await database?.close();
});

type Answer = { status: number; head: string[]; body: string };

/**
 * A GET from a chosen loopback address; `head` is the response's header fields as sent, in order
 * (`Name: value`), with the Date's value left out.
 */
function get(from: string, path: string, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const sent = request(`${server.url}${path}`, { localAddress: from, headers }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => {
        const head = [];
        for (let i = 0; i < response.rawHeaders.length; i += 2) {
          const name = response.rawHeaders[i] ?? '';
          head.push(name === 'Date' ? 'Date: <now>' : `${name}: ${response.rawHeaders[i + 1]}`);
        }
        resolve({ status: response.statusCode ?? 0, head, body });
      });
    });
    sent.on('error', reject);
    sent.end();
  });
}

const SECURITY_HEADERS = [
  "Content-Security-Policy: default-src 'none';frame-ancestors 'none'",
  'Cross-Origin-Opener-Policy: same-origin',
  'Cross-Origin-Resource-Policy: same-origin',
  'Origin-Agent-Cluster: ?1',
  'Referrer-Policy: no-referrer',
  'Strict-Transport-Security: max-age=31536000; includeSubDomains',
  'X-Content-Type-Options: nosniff',
  'X-DNS-Prefetch-Control: off',
  'X-Download-Options: noopen',
  'X-Frame-Options: DENY',
  'X-Permitted-Cross-Domain-Policies: none',
  'X-XSS-Protection: 0',
  'Cache-Control: no-store',
];

const MISSING_KEY_BODY =
  '{"code":"unauthorized","message":"Missing API key: send Authorization: Bearer <key>","status":401}';
const INVALID_KEY_BODY = '{"code":"unauthorized","message":"Invalid API key","status":401}';

describe('a refused request', () => {
  it('without a key: 401 with the security headers, its request id, the Bearer challenge and the Error body', async () => {
    const answer = await get('127.0.0.11', '/v1/pets', { 'X-Request-Id': 'no-key-1' });

    expect(answer.status).toBe(401);
    expect(answer.head).toEqual([
      ...SECURITY_HEADERS,
      'X-Request-Id: no-key-1',
      'WWW-Authenticate: Bearer realm="petstore"',
      'Content-Type: application/json; charset=utf-8',
      'Content-Length: 98',
      'Date: <now>',
      'Connection: keep-alive',
      'Keep-Alive: timeout=5',
    ]);
    expect(answer.body).toBe(MISSING_KEY_BODY);
  });

  it('for the deprecated getPet still announces its Sunset and Deprecation', async () => {
    const answer = await get('127.0.0.12', '/v1/pets/1', { 'X-Request-Id': 'no-key-2' });

    expect(answer.status).toBe(401);
    expect(answer.head).toEqual([
      ...SECURITY_HEADERS,
      'Sunset: Thu, 05 Dec 2030 00:00:00 GMT',
      'Deprecation: @1795219200',
      'X-Request-Id: no-key-2',
      'WWW-Authenticate: Bearer realm="petstore"',
      'Content-Type: application/json; charset=utf-8',
      'Content-Length: 98',
      'Date: <now>',
      'Connection: keep-alive',
      'Keep-Alive: timeout=5',
    ]);
    expect(answer.body).toBe(MISSING_KEY_BODY);
  });

  it('with a wrong key: 401 invalid_token with the failed-auth budget; past it, 429 with Retry-After', async () => {
    const wrong = { Authorization: 'Bearer wrong-key-0123456789', 'X-Request-Id': 'wrong-1' };

    const first = await get('127.0.0.13', '/v1/pets', wrong);
    await get('127.0.0.13', '/v1/pets', wrong);
    const refused = await get('127.0.0.13', '/v1/pets', wrong);

    expect(first.status).toBe(401);
    expect(first.head.map(withoutSeconds)).toEqual([
      ...SECURITY_HEADERS,
      'X-Request-Id: wrong-1',
      'RateLimit-Policy: "failed-auth";q=2;w=60',
      'RateLimit: "failed-auth";r=1;t=<s>',
      'WWW-Authenticate: Bearer realm="petstore", error="invalid_token"',
      'Content-Type: application/json; charset=utf-8',
      'Content-Length: 64',
      'Date: <now>',
      'Connection: keep-alive',
      'Keep-Alive: timeout=5',
    ]);
    expect(first.body).toBe(INVALID_KEY_BODY);
    expect(refused.status).toBe(429);
    const seconds = /t=(\d+)$/.exec(refused.head.find((field) => field.startsWith('RateLimit:')) ?? '')?.[1] ?? '';
    expect(refused.head).toEqual([
      ...SECURITY_HEADERS,
      'X-Request-Id: wrong-1',
      'RateLimit-Policy: "failed-auth";q=2;w=60',
      `RateLimit: "failed-auth";r=0;t=${seconds}`,
      `Retry-After: ${seconds}`,
      'Content-Type: application/json; charset=utf-8',
      `Content-Length: ${refused.body.length}`,
      'Date: <now>',
      'Connection: keep-alive',
      'Keep-Alive: timeout=5',
    ]);
    expect(JSON.parse(refused.body)).toEqual({
      code: 'rate_limited',
      message: `Too many failed authentications from this address; retry in ${seconds} s`,
      status: 429,
    });
  });

  it('keeps the connection: the next request goes on the same one', async () => {
    const keepAlive = new Agent({ keepAlive: true, maxSockets: 1 });
    const send = () =>
      new Promise<object | null>((resolve, reject) => {
        const sent = request(`${server.url}/v1/pets`, { agent: keepAlive }, (response) => {
          response.resume();
          response.on('end', () => resolve(response.socket));
        });
        sent.on('error', reject);
        sent.end();
      });
    try {
      const first = await send();
      const second = await send();

      expect(second).toBe(first);
    } finally {
      keepAlive.destroy();
    }
  });

  it('is counted in the metrics by status, and a 429 by the policy that refused it', async () => {
    const before = await metrics();
    await get('127.0.0.14', '/v1/pets', {});
    for (let i = 0; i <= FAILURES_PER_MINUTE; i++)
      await get('127.0.0.14', '/v1/pets', { Authorization: `Bearer guess-${i}` });

    const after = await metrics();

    expect(counter(after, 'http_requests_total{method="GET",route="unmatched",status="401"}')).toBe(
      counter(before, 'http_requests_total{method="GET",route="unmatched",status="401"}') + 1 + FAILURES_PER_MINUTE,
    );
    expect(counter(after, 'http_requests_total{method="GET",route="unmatched",status="429"}')).toBe(
      counter(before, 'http_requests_total{method="GET",route="unmatched",status="429"}') + 1,
    );
    expect(counter(after, 'http_requests_rate_limited_total{policy="failed-auth"}')).toBe(
      counter(before, 'http_requests_rate_limited_total{policy="failed-auth"}') + 1,
    );
  });

  it('is counted in the request log per client address and status, one line per address, never a line each', async () => {
    server.app.get(RefusedRequestsLog).flush();
    logged = '';
    await get('127.0.0.15', '/v1/pets', { 'X-Request-Id': 'not-a-line-of-its-own' });
    await get('127.0.0.15', '/v1/pets', {});
    for (let i = 0; i <= FAILURES_PER_MINUTE; i++)
      await get('127.0.0.15', '/v1/pets', { Authorization: `Bearer wrong-key-that-must-not-be-logged-${i}` });
    await get('127.0.0.16', '/v1/pets', {});
    await get('127.0.0.16', '/v1/pets', authorized);

    server.app.get(RefusedRequestsLog).flush();

    const lines = logged
      .trim()
      .split('\n')
      .map((line): Record<string, unknown> => JSON.parse(line) as Record<string, unknown>);
    expect(lines.filter((line) => line.msg === 'requests refused')).toEqual([
      expect.objectContaining({
        level: 30,
        context: 'RefusedRequests',
        address: '127.0.0.15',
        statuses: { '401': 2 + FAILURES_PER_MINUTE, '429': 1 },
      }),
      expect.objectContaining({ level: 30, context: 'RefusedRequests', address: '127.0.0.16', statuses: { '401': 1 } }),
    ]);
    // The keyed request is the only one with a line of its own.
    expect(lines.filter((line) => line.msg === 'request')).toEqual([
      expect.objectContaining({ route: '/v1/pets', response: { status: 200 } }),
    ]);
    for (const secret of ['not-a-line-of-its-own', 'wrong-key-that-must-not-be-logged', TEST_API_KEY, 'Bearer'])
      expect(logged).not.toContain(secret);
  });
});

/** A RateLimit field's seconds to reset, which depend on when the window started. */
function withoutSeconds(field: string): string {
  return field.startsWith('RateLimit:') ? field.replace(/t=\d+$/, 't=<s>') : field;
}

async function metrics(): Promise<string> {
  return (await fetch(`${server.url}/metrics`)).text();
}

function counter(text: string, series: string): number {
  const line = text.split('\n').find((each) => each.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}
