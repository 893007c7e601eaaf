import http from 'node:http';
import autocannon from 'autocannon';
import { type Server, watchProcess } from './servers.js';

export const CONNECTIONS = 32;

export type Scenario = {
  name: string;
  /** The status every response should have: any other, or a socket error, counts as a failure. */
  status: number;
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** A fresh path for each request (existing ids picked at random), instead of `path`. */
  nextPath?: () => string;
};

export type Measurement = {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** Largest VmRSS of the server process seen during the run. */
  maxRssMiB: number;
  /** CPU time (user + system) the server process spent per request. */
  cpuUsPerRequest: number;
  requests: number;
  failures: number;
};

/** The five scenarios run against both servers; pets 1..petCount exist. */
export function comparisonScenarios(apiKey: string, petCount: number): Scenario[] {
  const auth = { authorization: `Bearer ${apiKey}` };
  const anyPet = (): string => `/v1/pets/${1 + Math.floor(Math.random() * petCount)}`;
  return [
    { name: 'list limit=20', status: 200, method: 'GET', path: '/v1/pets?limit=20', headers: auth },
    { name: 'list available limit=100', status: 200, method: 'GET', path: '/v1/pets?status=available&limit=100', headers: auth },
    { name: 'get by id', status: 200, method: 'GET', path: anyPet(), headers: auth, nextPath: anyPet },
    {
      name: 'create',
      status: 201,
      method: 'POST',
      path: '/v1/pets',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Rex', categoryId: 1, status: 'available' }),
    },
    { name: 'no key (401)', status: 401, method: 'GET', path: '/v1/pets', headers: {} },
  ];
}

/** First page, a page near the end of the table (signed cursor), and the rare status. */
export function pagingScenarios(apiKey: string, deepCursor: string): Scenario[] {
  const auth = { authorization: `Bearer ${apiKey}` };
  return [
    { name: 'first page', status: 200, method: 'GET', path: '/v1/pets?limit=20', headers: auth },
    { name: 'deep page', status: 200, method: 'GET', path: `/v1/pets?limit=20&cursor=${encodeURIComponent(deepCursor)}`, headers: auth },
    { name: 'rare status', status: 200, method: 'GET', path: '/v1/pets?status=pending&limit=20', headers: auth },
  ];
}

export async function measure(server: Server, scenario: Scenario, seconds: number): Promise<Measurement> {
  const { nextPath } = scenario;
  const stopWatching = watchProcess(server.pid);
  try {
    const result = await autocannon({
      url: `${server.url}${scenario.path}`,
      connections: CONNECTIONS,
      duration: seconds,
      timeout: 10,
      method: scenario.method,
      headers: scenario.headers,
      body: scenario.body,
      requests: nextPath ? [{ setupRequest: (request) => ({ ...request, path: nextPath() }) }] : undefined,
    });
    const usage = stopWatching();
    server.assertRunning(); // a dead server answers nothing: no figures, but its last words
    const expected = result.statusCodeStats?.[`${scenario.status}`]?.count ?? 0;
    return {
      requestsPerSecond: result.requests.average,
      p50Ms: result.latency.p50,
      p99Ms: result.latency.p99,
      maxRssMiB: usage.maxRssMiB,
      cpuUsPerRequest: (1e6 * usage.cpuSeconds) / Math.max(result.requests.total, 1),
      requests: result.requests.total,
      failures: result.requests.total - expected + result.errors,
    };
  } finally {
    stopWatching();
  }
}

/**
 * Latency of one request at a time, timed to the microsecond (autocannon's histogram counts whole
 * milliseconds). Under 32 connections the server's CPU is the bottleneck and a page's latency is
 * mostly queueing, the same for every page; alone, a request's latency shows what its query costs.
 */
export async function measureLatency(server: Server, scenario: Scenario, seconds: number): Promise<Measurement> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const stopWatching = watchProcess(server.pid);
  const latenciesMs: number[] = [];
  let failures = 0;
  const deadline = performance.now() + seconds * 1000;
  try {
    while (performance.now() < deadline) {
      const started = performance.now();
      const status = await send(server.url, scenario, agent).catch(() => 0);
      latenciesMs.push(performance.now() - started);
      if (status !== scenario.status) failures++;
    }
    const usage = stopWatching();
    server.assertRunning();
    latenciesMs.sort((a, b) => a - b);
    const at = (quantile: number): number => Math.round(1000 * (latenciesMs[Math.min(latenciesMs.length - 1, Math.floor(quantile * latenciesMs.length))] ?? 0)) / 1000;
    return {
      requestsPerSecond: latenciesMs.length / seconds,
      p50Ms: at(0.5),
      p99Ms: at(0.99),
      maxRssMiB: usage.maxRssMiB,
      cpuUsPerRequest: (1e6 * usage.cpuSeconds) / Math.max(latenciesMs.length, 1),
      requests: latenciesMs.length,
      failures,
    };
  } finally {
    stopWatching();
    agent.destroy();
  }
}

function send(baseUrl: string, scenario: Scenario, agent: http.Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = http.request(`${baseUrl}${scenario.nextPath?.() ?? scenario.path}`, { method: scenario.method, headers: scenario.headers, agent, timeout: 10_000 }, (response) => {
      response.resume(); // the body is read and dropped: its transfer is part of the latency
      response.once('end', () => resolve(response.statusCode ?? 0));
      response.once('error', reject);
    });
    request.once('timeout', () => request.destroy(new Error('timed out')));
    request.once('error', reject);
    request.end(scenario.body);
  });
}
