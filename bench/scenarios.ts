import http from 'node:http';
import { CLIENT_CPU, cpuSeconds, peakRssMiB, type Server } from './servers.js';
import { runWrk } from './wrk.js';

export const CONNECTIONS = 32;

export type Scenario = {
  name: string;
  /** The status every response should have: any other, or a socket error, is a failure. */
  status: number;
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** Each request asks for `path` followed by a random existing id, from 1 to this. */
  randomIdUpTo?: number;
};

export type Measurement = {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** CPU time (user + system) of the server process over the measured window, per request. */
  cpuUsPerRequest: number;
  /** Peak resident set of the server process since it started (VmHWM). */
  peakRssMiB: number;
  requests: number;
  /** Answers with another status than expected, plus socket errors (connect, read, write, timeout). */
  failures: number;
  statuses: Record<string, number>;
  socketErrors: number;
};

/** The five scenarios run against every server; pets 1..petCount exist. */
export function comparisonScenarios(apiKey: string, petCount: number): Scenario[] {
  const auth = { Authorization: `Bearer ${apiKey}` };
  return [
    { name: 'list limit=20', status: 200, method: 'GET', path: '/v1/pets?limit=20', headers: auth },
    {
      name: 'list available limit=100',
      status: 200,
      method: 'GET',
      path: '/v1/pets?status=available&limit=100',
      headers: auth,
    },
    { name: 'get by id', status: 200, method: 'GET', path: '/v1/pets/', headers: auth, randomIdUpTo: petCount },
    {
      name: 'create',
      status: 201,
      method: 'POST',
      path: '/v1/pets',
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'Rex', categoryId: 1, status: 'available' }),
    },
    { name: 'no key (401)', status: 401, method: 'GET', path: '/v1/pets', headers: {} },
  ];
}

/** First page, a page near the end of the table (signed cursor), and the rare status. */
export function pagingScenarios(apiKey: string, deepCursor: string): Scenario[] {
  const auth = { Authorization: `Bearer ${apiKey}` };
  return [
    { name: 'first page', status: 200, method: 'GET', path: '/v1/pets?limit=20', headers: auth },
    {
      name: 'deep page',
      status: 200,
      method: 'GET',
      path: `/v1/pets?limit=20&cursor=${encodeURIComponent(deepCursor)}`,
      headers: auth,
    },
    { name: 'rare status', status: 200, method: 'GET', path: '/v1/pets?status=pending&limit=20', headers: auth },
  ];
}

/** CONNECTIONS connections of wrk for `seconds`; the server's CPU time is read around the run. */
export async function measure(server: Server, scenario: Scenario, seconds: number): Promise<Measurement> {
  const cpuBefore = cpuSeconds(server.pid);
  const result = await runWrk({
    url: `${server.url}${scenario.randomIdUpTo === undefined ? scenario.path : '/'}`,
    connections: CONNECTIONS,
    seconds,
    method: scenario.method,
    headers: scenario.headers,
    body: scenario.body,
    random:
      scenario.randomIdUpTo === undefined ? undefined : { pathPrefix: scenario.path, upTo: scenario.randomIdUpTo },
    cpu: CLIENT_CPU,
  });
  const cpu = cpuSeconds(server.pid) - cpuBefore;
  server.assertRunning(); // a dead server answers nothing: no figures, but its last words
  const { connect, read, write, timeout } = result.errors;
  const socketErrors = connect + read + write + timeout;
  return {
    requestsPerSecond: result.requests / (result.durationUs / 1e6),
    p50Ms: result.latencyUs.p50 / 1000,
    p99Ms: result.latencyUs.p99 / 1000,
    cpuUsPerRequest: (1e6 * cpu) / Math.max(result.requests, 1),
    peakRssMiB: peakRssMiB(server.pid),
    requests: result.requests,
    failures: result.requests - (result.statuses[String(scenario.status)] ?? 0) + socketErrors,
    statuses: result.statuses,
    socketErrors,
  };
}

/**
 * Latency of one request at a time, from this process. Under 32 connections the server's CPU is
 * the bottleneck and a page's latency is mostly queueing, the same for every page; alone, a
 * request's latency shows what its query costs.
 */
export async function measureLatency(server: Server, scenario: Scenario, seconds: number): Promise<Measurement> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const latenciesMs: number[] = [];
  const statuses: Record<string, number> = {};
  let socketErrors = 0;
  const cpuBefore = cpuSeconds(server.pid);
  const deadline = performance.now() + seconds * 1000;
  try {
    while (performance.now() < deadline) {
      const started = performance.now();
      const status = await send(server.url, scenario, agent).catch(() => 0);
      latenciesMs.push(performance.now() - started);
      if (status === 0) socketErrors++;
      else statuses[status] = (statuses[status] ?? 0) + 1;
    }
  } finally {
    agent.destroy();
  }
  const cpu = cpuSeconds(server.pid) - cpuBefore;
  server.assertRunning();
  latenciesMs.sort((a, b) => a - b);
  const at = (quantile: number): number =>
    latenciesMs[Math.min(latenciesMs.length - 1, Math.floor(quantile * latenciesMs.length))] ?? 0;
  return {
    requestsPerSecond: latenciesMs.length / seconds,
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    cpuUsPerRequest: (1e6 * cpu) / Math.max(latenciesMs.length, 1),
    peakRssMiB: peakRssMiB(server.pid),
    requests: latenciesMs.length,
    failures: latenciesMs.length - (statuses[String(scenario.status)] ?? 0),
    statuses,
    socketErrors,
  };
}

function send(baseUrl: string, scenario: Scenario, agent: http.Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      `${baseUrl}${scenario.path}`,
      { method: scenario.method, headers: scenario.headers, agent, timeout: 10_000 },
      (response) => {
        response.resume(); // the body is read and dropped: its transfer is part of the latency
        response.once('end', () => resolve(response.statusCode ?? 0));
        response.once('error', reject);
      },
    );
    request.once('timeout', () => request.destroy(new Error('timed out')));
    request.once('error', reject);
    request.end(scenario.body);
  });
}
