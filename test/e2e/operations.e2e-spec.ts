import { Writable } from 'node:stream';
import { HttpMetrics } from '../../src/interface/http/platform/metrics.js';
import { RefusedRequestsLog } from '../../src/interface/http/platform/refused-requests-log.js';
import { ShutdownState } from '../../src/interface/http/platform/shutdown-state.js';
import { drain } from '../../src/interface/http/platform/shutdown.js';
import { openTestDatabase, type TestDatabase } from '../support/database.js';
import { steadyLoad } from '../support/load.js';
import { authorized, json, startServer, TEST_API_KEY } from '../support/server.js';

let database: TestDatabase;

beforeAll(async () => {
  database = await openTestDatabase();
});
afterAll(async () => {
  await database?.close();
});

/** Collects what the service logs, one parsed JSON line each. */
type LogLine = {
  msg?: string;
  level?: number;
  context?: string;
  route?: string;
  durationMs?: number;
  request?: { id?: string; method?: string };
  response?: { status?: number };
};

function logCapture(): { stream: Writable; lines: () => LogLine[]; text: () => string } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  return {
    stream,
    text: () => text,
    lines: (): Record<string, unknown>[] =>
      text
        .trim()
        .split('\n')
        .map((line): Record<string, unknown> => JSON.parse(line) as Record<string, unknown>),
  };
}

describe('logs', () => {
  // One server for these tests, the first this file starts: nestjs-pino keeps one pino-http
  // logger per process, made for the first app.
  const log = logCapture();
  let server: Awaited<ReturnType<typeof startServer>>;
  beforeAll(async () => {
    server = await startServer(database, { log: log.stream });
  });
  afterAll(async () => {
    await server?.close();
  });

  it("write Nest's own start-up lines as JSON with their context, through the same logger", () => {
    expect(log.lines()).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          level: 30,
          context: 'RouterExplorer',
          msg: expect.stringContaining('{/v1/pets, POST}'),
        }),
        expect.objectContaining({
          level: 30,
          context: 'NestApplication',
          msg: 'Nest application successfully started',
        }),
      ]),
    );
  });

  it('write one JSON line per request with method, route, status, duration and request id, and never the key or the body', async () => {
    await fetch(`${server.url}/v1/pets`, {
      method: 'POST',
      headers: { ...json, 'X-Request-Id': 'trace-42' },
      body: JSON.stringify({ name: 'Secret Name Rex', categoryId: 1 }),
    });
    await fetch(`${server.url}/v1/pets/1`, { headers: authorized });
    await fetch(`${server.url}/v1/pets`, { headers: { Authorization: 'Bearer wrong-key-that-must-not-be-logged' } });
    await fetch(`${server.url}/v1/nowhere`, { headers: authorized });
    await fetch(`${server.url}/healthz`);
    // The refused request is counted per address instead (refusals.e2e-spec.ts): written here too.
    server.app.get(RefusedRequestsLog).flush();

    const requests = log.lines().filter((line) => line.msg === 'request');
    expect(
      requests.map(({ request, response, route }) => ({
        requestId: request?.id,
        method: request?.method,
        route,
        status: response?.status,
      })),
    ).toEqual([
      { requestId: 'trace-42', method: 'POST', route: '/v1/pets', status: 201 },
      { requestId: expect.any(String), method: 'GET', route: '/v1/pets/:petId', status: 200 },
      { requestId: expect.any(String), method: 'GET', route: 'unmatched', status: 404 },
      { requestId: expect.any(String), method: 'GET', route: '/healthz', status: 200 },
    ]);
    for (const line of requests) expect(line.durationMs).toEqual(expect.any(Number));
    for (const secret of [
      TEST_API_KEY,
      'wrong-key-that-must-not-be-logged',
      'Secret Name Rex',
      'authorization',
      'Bearer',
    ]) {
      expect(log.text()).not.toContain(secret);
    }
  });

  it('echo a sane X-Request-Id and replace one that is not', async () => {
    const server = await startServer(database);
    try {
      const echoed = await fetch(`${server.url}/healthz`, { headers: { 'X-Request-Id': 'abc-123_x.y:z' } });
      const replaced = await fetch(`${server.url}/healthz`, { headers: { 'X-Request-Id': 'has spaces and {json}' } });
      const generated = await fetch(`${server.url}/healthz`);

      expect(echoed.headers.get('x-request-id')).toBe('abc-123_x.y:z');
      expect(replaced.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
      expect(generated.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    } finally {
      await server.close();
    }
  });
});

describe('GET /metrics', () => {
  it('answers Prometheus text without a key: requests by route and status, latency histograms, pool and process metrics', async () => {
    const server = await startServer(database);
    try {
      await fetch(`${server.url}/v1/pets`, { headers: authorized });
      await fetch(`${server.url}/v1/pets`);
      await fetch(`${server.url}/v1/pets/123456`, { headers: authorized });

      const response = await fetch(`${server.url}/metrics`);
      const text = await response.text();

      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toContain('text/plain');
      expect(text).toContain('http_requests_total{method="GET",route="/v1/pets",status="200"} 1');
      // Refused before any route is looked for.
      expect(text).toContain('http_requests_total{method="GET",route="unmatched",status="401"} 1');
      expect(text).toContain('http_requests_total{method="GET",route="/v1/pets/:petId",status="404"} 1');
      expect(text).toContain(
        'http_request_duration_seconds_bucket{le="+Inf",method="GET",route="/v1/pets",status="200"} 1',
      );
      expect(text).toMatch(/db_pool_connections\{state="total"\} \d+/);
      expect(text).toContain('process_resident_memory_bytes');
      expect(text).not.toContain('123456');
    } finally {
      await server.close();
    }
  });
});

describe('graceful shutdown', () => {
  it('drops nothing under steady keep-alive load: every request sent is answered, then new connections are refused', async () => {
    const server = await startServer(database);
    const load = steadyLoad(server.url, json);
    await new Promise((resolve) => setTimeout(resolve, 1000));

    load.stopping();
    const result = await drain(server.app, { delayMs: 500, timeoutMs: 10_000 });
    const counts = await load.finished;

    // What the server itself counted: every request it accepted, by status (499: client gone).
    const accepted = (await server.app.get(HttpMetrics).registry.getSingleMetricAsString('http_requests_total'))
      .split('\n')
      .filter((line) => line.startsWith('http_requests_total{'))
      .map((line) => ({ status: /status="(\d+)"/.exec(line)?.[1] ?? '', count: Number(line.split(' ').at(-1)) }));
    const acceptedTotal = accepted.reduce((sum, { count }) => sum + count, 0);
    console.log(
      `shutdown under load: ${JSON.stringify(counts)}, server accepted ${acceptedTotal}, drained in ${result.drainedInMs} ms`,
    );
    expect(counts.failed).toBe(0);
    expect(counts.droppedBy).toEqual([]);
    expect(counts.refused).toBeGreaterThanOrEqual(16);
    expect(accepted.filter(({ status }) => status !== '200' && status !== '201')).toEqual([]);
    // Every request the server accepted was answered to its client; the others were refused.
    expect(counts.answered).toBe(acceptedTotal);
    expect(counts.answered).toBeGreaterThan(20);
    expect(result.timedOut).toBe(false);
    await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
  });

  it('answers /readyz with 503 while draining', async () => {
    const server = await startServer(database);
    try {
      Object.assign(server.app.get(ShutdownState), { draining: true, closing: true });

      const response = await fetch(`${server.url}/readyz`);

      expect(response.status).toBe(503);
      expect(response.headers.get('connection')).toBe('close');
      expect(await response.json()).toEqual({
        code: 'unavailable',
        message: expect.stringContaining('shutting down'),
        status: 503,
      });
    } finally {
      await server.close();
    }
  });
});
