import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { CLIENT_CPU, cpuSeconds, databaseCpuSeconds, peakRssMiB, type Server } from './servers.js';
import { runWrk } from './wrk.js';

export const CONNECTIONS = 32;

export type Scenario = {
  name: string;
  /** The statuses a response may have: any other, or a socket error, is a failure. */
  accepted: number[];
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** Each request asks for `path` followed by a random existing id, from 1 to this. */
  randomIdUpTo?: number;
  /** Paced traffic: this many connections (default CONNECTIONS), each waiting `delayMs` after an answer before its next request. */
  connections?: number;
  delayMs?: number;
};

/**
 * Ordinary traffic measured alone, then again while a second wrk floods wrong keys at full speed:
 * what a credential-stuffing flood does to everyone else's latency.
 */
export type FloodScenario = { name: string; ordinary: Scenario; flood: Scenario };

export type Measurement = {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** CPU time (user + system) of the server process over the measured window, per request. */
  cpuUsPerRequest: number;
  /** CPU time of PostgreSQL's processes over the same window, per request (0: PostgreSQL is elsewhere). */
  databaseCpuUsPerRequest: number;
  /** Peak resident set of the server process since it started (VmHWM). */
  peakRssMiB: number;
  requests: number;
  /** Answers with another status than expected, plus socket errors (connect, read, write, timeout). */
  failures: number;
  statuses: Record<string, number>;
  socketErrors: number;
};

/** A key of the right shape that no server knows. */
const WRONG_KEY = 'wrong-key-0123456789';

/** The scenarios measured for throughput on every server; pets 1..petCount exist. */
export function comparisonScenarios(apiKey: string, petCount: number): Scenario[] {
  const auth = { Authorization: `Bearer ${apiKey}` };
  return [
    { name: 'list limit=20', accepted: [200], method: 'GET', path: '/v1/pets?limit=20', headers: auth },
    {
      name: 'list available limit=100',
      accepted: [200],
      method: 'GET',
      path: '/v1/pets?status=available&limit=100',
      headers: auth,
    },
    { name: 'get by id', accepted: [200], method: 'GET', path: '/v1/pets/', headers: auth, randomIdUpTo: petCount },
    {
      name: 'create',
      accepted: [201],
      method: 'POST',
      path: '/v1/pets',
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'Rex', categoryId: 1, status: 'available' }),
    },
    { name: 'no key (401)', accepted: [401], method: 'GET', path: '/v1/pets', headers: {} },
    wrongKeyScenario(),
  ];
}

/**
 * A presented but wrong key: 401 invalid_token, or 429 once the address has spent its
 * failed-authentication quota (ours, whose limit stays on; the baselines have none). Every
 * request comes from 127.0.0.1, so after the first few of each minute ours answers 429.
 */
function wrongKeyScenario(): Scenario {
  return {
    name: 'wrong key (401/429)',
    accepted: [401, 429],
    method: 'GET',
    path: '/v1/pets',
    headers: { Authorization: `Bearer ${WRONG_KEY}` },
  };
}

/** Paced at about ORDINARY_CONNECTIONS * 1000 / ORDINARY_DELAY_MS requests per second, well below what any server can answer. */
export const ORDINARY_CONNECTIONS = 10;
export const ORDINARY_DELAY_MS = 10;

/** Lists of 20 with the right key, paced, alone and beside a flood of wrong keys from CONNECTIONS connections. */
export function floodScenario(apiKey: string): FloodScenario {
  return {
    name: 'list limit=20 under a wrong-key flood',
    ordinary: {
      name: 'ordinary lists',
      accepted: [200],
      method: 'GET',
      path: '/v1/pets?limit=20',
      headers: { Authorization: `Bearer ${apiKey}` },
      connections: ORDINARY_CONNECTIONS,
      delayMs: ORDINARY_DELAY_MS,
    },
    flood: { ...wrongKeyScenario(), name: 'wrong-key flood' },
  };
}

/** First page, a page near the end of the table (signed cursor), and the rare status. */
export function pagingScenarios(apiKey: string, deepCursor: string): Scenario[] {
  const auth = { Authorization: `Bearer ${apiKey}` };
  return [
    { name: 'first page', accepted: [200], method: 'GET', path: '/v1/pets?limit=20', headers: auth },
    {
      name: 'deep page',
      accepted: [200],
      method: 'GET',
      path: `/v1/pets?limit=20&cursor=${encodeURIComponent(deepCursor)}`,
      headers: auth,
    },
    { name: 'rare status', accepted: [200], method: 'GET', path: '/v1/pets?status=pending&limit=20', headers: auth },
  ];
}

/** CONNECTIONS connections of wrk for `seconds`; the server's CPU time is read around the run. */
export async function measure(server: Server, scenario: Scenario, seconds: number): Promise<Measurement> {
  const cpuBefore = cpuSeconds(server.pid);
  const databaseCpuBefore = databaseCpuSeconds();
  const result = await runWrk({
    url: `${server.url}${scenario.randomIdUpTo === undefined ? scenario.path : '/'}`,
    connections: scenario.connections ?? CONNECTIONS,
    delayMs: scenario.delayMs,
    seconds,
    method: scenario.method,
    headers: scenario.headers,
    body: scenario.body,
    random:
      scenario.randomIdUpTo === undefined ? undefined : { pathPrefix: scenario.path, upTo: scenario.randomIdUpTo },
    cpu: CLIENT_CPU,
  });
  const cpu = cpuSeconds(server.pid) - cpuBefore;
  const databaseCpu = databaseCpuSeconds() - databaseCpuBefore;
  server.assertRunning(); // a dead server answers nothing: no figures, but its last words
  const { connect, read, write, timeout } = result.errors;
  const socketErrors = connect + read + write + timeout;
  return {
    requestsPerSecond: result.requests / (result.durationUs / 1e6),
    p50Ms: result.latencyUs.p50 / 1000,
    p99Ms: result.latencyUs.p99 / 1000,
    cpuUsPerRequest: (1e6 * cpu) / Math.max(result.requests, 1),
    databaseCpuUsPerRequest: (1e6 * databaseCpu) / Math.max(result.requests, 1),
    peakRssMiB: peakRssMiB(server.pid),
    requests: result.requests,
    failures: result.requests - acceptedCount(scenario, result.statuses) + socketErrors,
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
  const databaseCpuBefore = databaseCpuSeconds();
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
  const databaseCpu = databaseCpuSeconds() - databaseCpuBefore;
  server.assertRunning();
  latenciesMs.sort((a, b) => a - b);
  const at = (quantile: number): number =>
    latenciesMs[Math.min(latenciesMs.length - 1, Math.floor(quantile * latenciesMs.length))] ?? 0;
  return {
    requestsPerSecond: latenciesMs.length / seconds,
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    cpuUsPerRequest: (1e6 * cpu) / Math.max(latenciesMs.length, 1),
    databaseCpuUsPerRequest: (1e6 * databaseCpu) / Math.max(latenciesMs.length, 1),
    peakRssMiB: peakRssMiB(server.pid),
    requests: latenciesMs.length,
    failures: latenciesMs.length - acceptedCount(scenario, statuses),
    statuses,
    socketErrors,
  };
}

const FLOOD_MARGIN_SECONDS = 1;

/**
 * The ordinary traffic measured while the flood runs: the flood starts first and ends last
 * (FLOOD_MARGIN_SECONDS either side), so it covers the whole measured window. Both wrk run on the
 * client CPU: the server keeps its own CPU to itself, as in every other scenario.
 */
export async function measureUnderFlood(
  server: Server,
  scenario: FloodScenario,
  seconds: number,
): Promise<{ ordinary: Measurement; flood: Measurement }> {
  // Both awaited together: a failure of either is reported; the other wrk ends on its own at its -d.
  const [ordinary, flood] = await Promise.all([
    sleep(FLOOD_MARGIN_SECONDS * 1000).then(() => measure(server, scenario.ordinary, seconds)),
    measure(server, scenario.flood, seconds + 2 * FLOOD_MARGIN_SECONDS),
  ]);
  return { ordinary, flood };
}

function acceptedCount(scenario: Scenario, statuses: Record<string, number>): number {
  return scenario.accepted.reduce((total, status) => total + (statuses[String(status)] ?? 0), 0);
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
