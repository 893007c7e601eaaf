import { Writable } from 'node:stream';
import { HttpMetrics } from '../../src/interface/http/metrics.js';
import { ShutdownState } from '../../src/interface/http/shutdown-state.js';
import { drain } from '../../src/shutdown.js';
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
function logCapture(): { stream: Writable; lines: () => Record<string, unknown>[]; text: () => string } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  return { stream, text: () => text, lines: () => text.trim().split('\n').map((line) => JSON.parse(line)) };
}

describe('logs', () => {
  it('write one JSON line per request with method, route, status, duration and request id, and never the key or the body', async () => {
    const log = logCapture();
    const server = await startServer(database.dataSource, { log: log.stream });
    try {
      await fetch(`${server.url}/v1/pets`, { method: 'POST', headers: { ...json, 'X-Request-Id': 'trace-42' }, body: JSON.stringify({ name: 'Secret Name Rex', categoryId: 1 }) });
      await fetch(`${server.url}/v1/pets/1`, { headers: authorized });
      await fetch(`${server.url}/v1/pets`, { headers: { Authorization: 'Bearer wrong-key-that-must-not-be-logged' } });
      await fetch(`${server.url}/nowhere`);

      const requests = log.lines().filter((line) => line.msg === 'request');
      expect(requests.map(({ requestId, method, route, status }) => ({ requestId, method, route, status }))).toEqual([
        { requestId: 'trace-42', method: 'POST', route: '/v1/pets', status: 201 },
        { requestId: expect.any(String), method: 'GET', route: '/v1/pets/:petId', status: 200 },
        { requestId: expect.any(String), method: 'GET', route: '/v1/pets', status: 401 },
        { requestId: expect.any(String), method: 'GET', route: 'unmatched', status: 404 },
      ]);
      for (const line of requests) expect(line.durationMs).toEqual(expect.any(Number));
      for (const secret of [TEST_API_KEY, 'wrong-key-that-must-not-be-logged', 'Secret Name Rex', 'authorization', 'Bearer']) {
        expect(log.text()).not.toContain(secret);
      }
    } finally {
      await server.close();
    }
  });

  it("write Nest's own start-up lines as JSON with their context, through the same logger", async () => {
    const log = logCapture();
    const server = await startServer(database.dataSource, { log: log.stream });
    await server.close();

    expect(log.lines()).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ level: 30, context: 'InstanceLoader', msg: expect.stringContaining('AppModule dependencies initialized') }),
        expect.objectContaining({ level: 30, context: 'RouterExplorer', msg: expect.stringContaining('{/v1/pets, POST}') }),
        expect.objectContaining({ level: 30, context: 'NestApplication', msg: 'Nest application successfully started' }),
      ]),
    );
  });

  it('echo a sane X-Request-Id and replace one that is not', async () => {
    const server = await startServer(database.dataSource);
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
    const server = await startServer(database.dataSource);
    try {
      await fetch(`${server.url}/v1/pets`, { headers: authorized });
      await fetch(`${server.url}/v1/pets`);
      await fetch(`${server.url}/v1/pets/123456`, { headers: authorized });

      const response = await fetch(`${server.url}/metrics`);
      const text = await response.text();

      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toContain('text/plain');
      expect(text).toContain('http_requests_total{method="GET",route="/v1/pets",status="200"} 1');
      expect(text).toContain('http_requests_total{method="GET",route="/v1/pets",status="401"} 1');
      expect(text).toContain('http_requests_total{method="GET",route="/v1/pets/:petId",status="404"} 1');
      expect(text).toContain('http_request_duration_seconds_bucket{le="+Inf",method="GET",route="/v1/pets",status="200"} 1');
      expect(text).toMatch(/db_pool_connections\{state="total"\} \d+/);
      expect(text).toContain('process_resident_memory_bytes');
      expect(text).not.toContain('123456');
    } finally {
      await server.close();
    }
  });
});

describe('graceful shutdown', () => {
  it('lets accepted requests finish under steady load: 0 failed, then refuses new connections', async () => {
    const server = await startServer(database.dataSource);
    const load = steadyLoad(server.url, json);
    await new Promise((resolve) => setTimeout(resolve, 1000));

    load.stopping();
    const result = await drain(server.app, 10_000);
    const counts = await load.finished;

    // What the server itself counted: every request it accepted, by status (499: client gone).
    const accepted = (await server.app.get(HttpMetrics).registry.getSingleMetricAsString('http_requests_total'))
      .split('\n')
      .filter((line) => line.startsWith('http_requests_total{'))
      .map((line) => ({ status: /status="(\d+)"/.exec(line)?.[1] ?? '', count: Number(line.split(' ').at(-1)) }));
    const acceptedTotal = accepted.reduce((sum, { count }) => sum + count, 0);
    console.log(`shutdown under load: ${JSON.stringify(counts)}, server accepted ${acceptedTotal}, drained in ${result.drainedInMs} ms`);
    expect(counts.failed).toBe(0);
    expect(accepted.filter(({ status }) => status !== '200' && status !== '201')).toEqual([]);
    // Every request the server accepted was answered to its client; the others were refused.
    expect(counts.answered).toBe(acceptedTotal);
    expect(counts.answered).toBeGreaterThan(20);
    expect(result.timedOut).toBe(false);
    await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
  });

  it('answers /readyz with 503 while draining', async () => {
    const server = await startServer(database.dataSource);
    try {
      server.app.get(ShutdownState).draining = true;

      const response = await fetch(`${server.url}/readyz`);

      expect(response.status).toBe(503);
      expect(response.headers.get('connection')).toBe('close');
      expect(await response.json()).toEqual({ code: 'unavailable', message: expect.stringContaining('shutting down'), status: 503 });
    } finally {
      await server.close();
    }
  });
});

describe('the HTTP server', () => {
  it("hands Express requests that already have Express's prototype (see PetStoreExpressAdapter)", async () => {
    const server = await startServer(database.dataSource);
    try {
      const express = server.app.getHttpAdapter().getInstance() as { request: object };
      const arrived: object[] = [];
      server.app.getHttpServer().prependListener('request', (request: object) => arrived.push(Object.getPrototypeOf(request) as object));

      expect((await fetch(`${server.url}/v1/pets`, { headers: authorized })).status).toBe(200);
      expect(arrived).toHaveLength(1);
      expect(arrived[0]).toBe(express.request);
    } finally {
      await server.close();
    }
  });
});
