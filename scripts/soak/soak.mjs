// `npm run soak`: the cluster of `npm run cluster:up` (HAProxy, three instances, three PostgreSQL
// nodes under Patroni, Redis) under a steady mixed load through the balancer, with a fault
// injected every 20-60 s; then the checks (scripts/soak/verdict.mjs), the figures and a picture.
//
//   npm run soak                                   30 minutes, a fresh seed (printed)
//   SOAK_MINUTES=3 SOAK_SEED=20261125 npm run soak  a short run replaying the same fault schedule
//
// SOAK_FAULTS: the fault kinds to inject, a comma list (default all of schedule.mjs's FAULT_KINDS).
// SOAK_RATE: requests per second the clients aim at (default 150). SOAK_KEEP=1 leaves the cluster
// up afterwards. The figures and the SVG go to reports/soak/. Exit code 1 on any failed check.
import { execFile, fork } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import pg from 'pg';
import { buckets, chart } from './chart.mjs';
import { declaredStatuses, startLoad } from './clients.mjs';
import { cluster, inject } from './faults.mjs';
import { sampleInstances } from './samples.mjs';
import { describeFault, FAULT_KINDS, faultSchedule, seededRandom } from './schedule.mjs';
import { judge } from './verdict.mjs';

process.chdir(path.resolve(import.meta.dirname, '../..'));
const INSTANCES = 3;
const minutes = Number(process.env.SOAK_MINUTES ?? '30');
const seed = process.env.SOAK_SEED ? Number(process.env.SOAK_SEED) : randomInt(2 ** 31);
const rate = Number(process.env.SOAK_RATE ?? '150');
if (!(minutes > 0) || !Number.isInteger(seed) || !(rate > 0)) {
  console.error('SOAK_MINUTES and SOAK_RATE must be positive numbers, SOAK_SEED an integer');
  process.exit(2);
}
const durationMs = Math.round(minutes * 60_000);
const long = durationMs >= 10 * 60_000;
const warmupMs = Math.min(60_000, durationMs / 6);
const bucketMs = long ? 60_000 : 10_000;
const sampleMs = long ? 5000 : 2000;

let started = performance.now();
const now = () => performance.now() - started;
const log = (line) =>
  console.log(`[${(now() / 1000).toFixed(1).padStart(7)} s ${new Date().toISOString().slice(11, 19)}Z] ${line}`);

function readEnv() {
  const values = {};
  for (const match of readFileSync('.cluster/env', 'utf8').matchAll(/^(\w+)=(.*)$/gm)) values[match[1]] = match[2];
  return values;
}

/** The pausable database proxies, one per instance, in a child process (scripts/soak/db-proxy.mjs). */
async function startProxies() {
  const child = fork(path.resolve(import.meta.dirname, 'db-proxy.mjs'), [String(INSTANCES)], { stdio: 'inherit' });
  const waiting = [];
  child.on('message', (message) => waiting.shift()?.(message));
  const next = () => new Promise((resolve) => waiting.push(resolve));
  const { ports } = await next();
  return {
    ports,
    async silence(instance) {
      const answer = next();
      child.send({ silence: instance });
      return (await answer).connections;
    },
    stop: () => child.kill(),
  };
}

async function issueKey(primaryUrl, label) {
  const { stdout } = await promisify(execFile)('node', ['dist/src/keys.js', 'issue', '--label', label], {
    env: { ...process.env, DATABASE_URL: primaryUrl, API_KEYS: '' },
  });
  return stdout.trim().split('\n').at(-1);
}

const drawn = faultSchedule({ seed, instances: INSTANCES, lastStartMs: durationMs - 30_000 });
const { spared } = drawn;
// SOAK_FAULTS: a comma list of the kinds to inject (default all); the others keep their times.
const kinds = process.env.SOAK_FAULTS ? process.env.SOAK_FAULTS.split(',').map((kind) => kind.trim()) : FAULT_KINDS;
const unknown = kinds.filter((kind) => !FAULT_KINDS.includes(kind));
if (unknown.length > 0) {
  console.error(`SOAK_FAULTS: unknown kinds ${unknown.join(', ')} (known: ${FAULT_KINDS.join(', ')})`);
  process.exit(2);
}
const schedule = drawn.faults.filter((fault) => kinds.includes(fault.kind));
console.log(
  `soak: ${minutes} min at ${rate} req/s, seed ${seed} (replay: SOAK_SEED=${seed} SOAK_MINUTES=${minutes} npm run soak)`,
);
console.log(`soak: instance ${spared} is never restarted; ${schedule.length} faults scheduled:`);
for (const fault of schedule) console.log(`  +${(fault.at / 1000).toFixed(0)} s: ${describeFault(fault)}`);

const proxy = await startProxies();
// Interrupted: leave nothing running.
for (const signal of ['SIGINT', 'SIGTERM'])
  process.once(signal, () => {
    console.error(`soak: ${signal}, stopping the cluster`);
    void cluster('down')
      .catch(() => undefined)
      .finally(() => {
        proxy.stop();
        process.exit(1);
      });
  });
for (const [i, port] of proxy.ports.entries())
  process.env[`INSTANCE_${i + 1}_DATABASE_URL`] = `postgres://postgres@127.0.0.1:${port}/petstore`;
// The cluster's own Redis, which the soak may pause, never a shared one.
delete process.env.REDIS_URL;
let exitCode = 1;
try {
  await cluster('down');
  console.log('soak: cluster up (build, etcd, 3 PostgreSQL nodes under Patroni, Redis, 3 instances, HAProxy)');
  await cluster('up', String(INSTANCES));
  const env = readEnv();
  const instancePorts = Array.from({ length: INSTANCES }, (_, i) => Number(env[`INSTANCE_${i + 1}_PORT`]));
  const keys = [env.API_KEY, await issueKey(env.PRIMARY_URL, 'soak a'), await issueKey(env.PRIMARY_URL, 'soak b')];
  const declared = declaredStatuses(await (await fetch(`${env.BALANCER_URL}/openapi.json`)).json());
  const database = new pg.Pool({ connectionString: env.PRIMARY_URL, max: 1, application_name: 'soak' });
  database.on('error', () => undefined);

  started = performance.now();
  log(`load starts through ${env.BALANCER_URL}`);
  const runId = `soak-${seed}-${Date.now().toString(36)}`;
  const load = startLoad({
    baseUrl: env.BALANCER_URL,
    keys,
    declared,
    runId,
    started,
    rate,
    random: seededRandom(seed ^ 0x5eed),
  });

  // Samples every few seconds until the end.
  const samples = [];
  const activity = [];
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const at = now();
      samples.push(
        ...(await sampleInstances({
          instancePorts,
          databasePorts: (i) => [proxy.ports[i - 1], Number(env.REPLICA_PORT)],
          at,
        })),
      );
      const count = await database
        .query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'petstore'`)
        .catch(() => null);
      if (count !== null) activity.push({ at, connections: count.rows[0].n });
      await sleep(Math.max(0, sampleMs - (now() - at)));
    }
  })();

  // Progress, one line per bucket.
  const progress = setInterval(() => {
    const recent = load.records.filter((r) => r.sentAt >= now() - bucketMs);
    const failed = recent.filter((r) => r.status === 0 || r.status >= 400).length;
    log(
      `${(recent.length / (bucketMs / 1000)).toFixed(0)} req/s, ${failed} not 2xx, ${load.creates.length} creates so far`,
    );
  }, bucketMs);

  // The faults, one after the other, each at its scheduled time (or when the one before it is healed).
  const faults = [];
  const hostile = [];
  const random = seededRandom(seed ^ 0xfa17);
  for (const fault of schedule) {
    await sleep(Math.max(0, fault.at - now()));
    // Slow heals push the later faults back; none starts too close to the end to be healed.
    if (now() > durationMs - 20_000) {
      log(`not injected (too close to the end): ${describeFault(fault)}`);
      continue;
    }
    log(`fault: ${describeFault(fault)}`);
    const begin = now();
    try {
      const done = await inject(fault, {
        now,
        proxy,
        random,
        hostile,
        instancePorts,
        balancerUrl: env.BALANCER_URL,
        apiKey: env.API_KEY,
      });
      faults.push({ ...done, description: describeFault(fault) });
      log(
        `healed: ${fault.kind} after ${((done.healed - done.begin) / 1000).toFixed(1)} s${done.detail ? ` (${done.detail})` : ''}`,
      );
    } catch (error) {
      log(`fault ${fault.kind} could not be injected or healed: ${error.message}`);
      faults.push({
        ...fault,
        begin,
        healed: now(),
        detail: `NOT HEALED: ${error.message}`,
        unhealed: true,
        description: describeFault(fault),
      });
    }
  }
  await sleep(Math.max(0, durationMs - now()));
  const endMs = now();
  log('load stops; the pagers read to the end');
  await load.stop();
  clearInterval(progress);
  sampling = false;
  await sampler;

  const stored = (
    await database.query(
      `SELECT id::float8 AS id, name, category_id::float8 AS "categoryId", status FROM pets WHERE name LIKE $1`,
      [`${runId} %`],
    )
  ).rows;
  await database.end();

  const { lines, failures } = judge({
    records: load.records.filter((r) => r.sentAt <= endMs),
    creates: load.creates,
    pagers: load.pagers,
    stored,
    faults,
    samples,
    hostile,
    spared,
    warmupMs,
    endMs,
  });
  const activityFirst = activity.filter((a) => a.at >= warmupMs).slice(0, 10);
  lines.push(
    `pg_stat_activity, the service's connections: ${activityFirst.map((a) => a.connections).join(' ')} at first, ` +
      `${activity
        .slice(-10)
        .map((a) => a.connections)
        .join(' ')} at the end`,
  );
  const header = `soak ${new Date().toISOString().slice(0, 16)}Z: ${minutes} min, seed ${seed}, ${rate} req/s aimed, Node ${process.version}`;
  const report = [
    header,
    ...lines,
    failures.length === 0 ? 'PASS: every check held' : 'FAIL:',
    ...failures.map((f) => `  ${f}`),
  ];
  console.log(`\n${report.join('\n')}`);

  mkdirSync('reports/soak', { recursive: true });
  const name = `reports/soak/soak-${minutes}min-${seed}`;
  writeFileSync(
    `${name}.txt`,
    `${report.join('\n')}\n\nfaults:\n${faults.map((f) => `  +${(f.begin / 1000).toFixed(1)} s: ${f.description}`).join('\n')}\n`,
  );
  const rows = buckets({ records: load.records, samples, endMs, bucketMs });
  writeFileSync(`${name}.svg`, chart({ rows, faults, endMs, bucketMs, title: `${header} (per ${bucketMs / 1000} s)` }));
  console.log(`soak: figures in ${name}.txt, picture in ${name}.svg`);
  exitCode = failures.length === 0 ? 0 : 1;
} catch (error) {
  console.error(`soak: ${error.stack ?? error}`);
} finally {
  if (process.env.SOAK_KEEP === '1')
    console.log('soak: the cluster is left up (SOAK_KEEP=1); stop it with npm run cluster:down');
  else await cluster('down').catch((error) => console.error(`soak: cluster down: ${error.message}`));
  proxy.stop();
}
process.exit(exitCode);
