// Crash safety: no write the service acknowledged (201) may be lost when Node dies with SIGKILL.
//
// For CRASH_RUNS runs on one DATA_DIR: drive creates from several clients, SIGKILL the Node process
// at a random moment (only Node: its embedded postgres is left running, as after a real `kill -9`,
// and the next start must deal with that orphan), restart on the same DATA_DIR, and check through
// the API that every pet answered 201 is there with the same content.
//
//   npm run crash-test                    # embedded PostgreSQL in a fresh temp DATA_DIR
//   DATABASE_URL=postgres://... npm run crash-test   # the given server instead
//   CRASH_RUNS=50 npm run crash-test
//
// Exit code 1 if an acknowledged pet is missing or changed, or a start/restart fails.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const RUNS = Number.parseInt(process.env.CRASH_RUNS ?? '10', 10);
const CLIENTS = 8;
const KILL_AFTER_MS = { min: 300, max: 1500 };
const READY_TIMEOUT_MS = 60_000;
const REQUEST_TIMEOUT_MS = 10_000;
const EXIT_TIMEOUT_MS = 30_000; // for a killed or SIGTERMed process to be gone
const VERIFY_TIMEOUT_MS = 300_000; // paging through every pet, however many runs left behind
const ROOT = path.resolve(import.meta.dirname, '..');
const API_KEY = `crash-${randomBytes(16).toString('hex')}`;
const EMBEDDED = !process.env.DATABASE_URL;

if (!Number.isInteger(RUNS) || RUNS < 1) {
  console.error(`CRASH_RUNS must be a positive integer, got "${process.env.CRASH_RUNS}"`);
  process.exit(1);
}

// Run a copy of the build: a rebuild during the loop (`rm -rf dist`) must not pull the service from
// under a restart. Under node_modules so the copy still resolves the project's packages; the
// package.json marks it ESM, since a package scope lookup stops at node_modules.
await mkdir(path.join(ROOT, 'node_modules', '.cache'), { recursive: true });
const buildCopy = await mkdtemp(path.join(ROOT, 'node_modules', '.cache', 'petstore-crash-'));
try {
  await cp(path.join(ROOT, 'dist'), path.join(buildCopy, 'dist'), { recursive: true });
  await writeFile(path.join(buildCopy, 'package.json'), '{ "type": "module" }\n');
} catch (error) {
  await rm(buildCopy, { recursive: true, force: true });
  console.error(`crash loop FAILED: no build to copy (${error.message}); run npm run build`);
  process.exit(1);
}
const MAIN = path.join(buildCopy, 'dist', 'src', 'main.js');
const dataDir = await mkdtemp(path.join(os.tmpdir(), 'petstore-crash-'));
const clusterDir = path.join(dataDir, 'postgres');
const groups = new Set(); // process groups of every service started, to leave nothing behind
let service = null; // the service currently running, if any
let cleaning = null; // the one cleanup, once started

// Ctrl-C or a CI timeout must not leave a service or postgres running either.
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => void cleanup().finally(() => process.exit(1)));
}

const started = Date.now();
const acknowledged = new Map(); // id -> the pet the 201 carried
const lost = new Set();
let failed;
try {
  console.log(
    `crash loop: ${RUNS} runs, DATA_DIR ${dataDir}, database: ${EMBEDDED ? 'embedded PostgreSQL' : 'DATABASE_URL'}`,
  );
  service = await startService();
  await waitReady(service);
  for (let run = 1; run <= RUNS; run++) {
    const killAfter = KILL_AFTER_MS.min + Math.floor(Math.random() * (KILL_AFTER_MS.max - KILL_AFTER_MS.min));
    const load = driveCreates(service, run);
    await sleep(killAfter);
    load.stop();
    // SIGKILL to the Node pid only, not its group: postgres must survive as an orphan.
    process.kill(service.child.pid, 'SIGKILL');
    await withTimeout(service.exited, EXIT_TIMEOUT_MS, 'the killed service to exit');
    const outcome = await load.done;
    const orphan = EMBEDDED ? runningPostmaster() : null;
    if (EMBEDDED && orphan === null) console.log(`  run ${run}: note: no postgres was left running after the SIGKILL`);

    for (const pet of outcome.acknowledged) acknowledged.set(pet.id, pet);
    service = await startService();
    const restartMs = await waitReady(service);
    if (orphan !== null && isRunning(orphan))
      throw new Error(`run ${run}: the orphaned postgres pid ${orphan} still runs after the restart`);

    // Check every pet acknowledged so far, not only this run's: earlier writes must survive too.
    const stored = await listAllPets(service);
    let found = 0;
    for (const pet of acknowledged.values()) {
      const copy = stored.get(pet.id);
      const same =
        copy !== undefined &&
        copy.name === pet.name &&
        copy.categoryId === pet.categoryId &&
        copy.status === pet.status;
      if (!same && !lost.has(pet.id)) {
        lost.add(pet.id);
        console.log(`  LOST: ${JSON.stringify(pet)} (acknowledged), stored: ${JSON.stringify(copy ?? null)}`);
      }
    }
    for (const pet of outcome.acknowledged) if (!lost.has(pet.id)) found++;
    const others = Object.entries(outcome.otherAnswers)
      .map(([status, count]) => `${status}×${count}`)
      .join(' ');
    console.log(
      `run ${String(run).padStart(2)}: acknowledged ${outcome.acknowledged.length}, found ${found}, ` +
        `lost ${outcome.acknowledged.length - found}, restart ${restartMs} ms ` +
        `(killed after ${killAfter} ms${orphan !== null ? `, orphaned postgres pid ${orphan} stopped by the restart` : ''}` +
        `${others ? `; other answers before the kill: ${others}` : ''}; ${outcome.cutOff} requests cut off by the kill)`,
    );
  }
  failed = lost.size > 0;
  console.log(
    `crash loop: ${RUNS} runs, ${lost.size} lost acknowledged writes (${acknowledged.size} acknowledged), ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
} catch (error) {
  failed = true;
  console.error(`crash loop FAILED: ${error instanceof Error ? error.message : String(error)}`);
  if (service !== null)
    console.error(`last output of the service (pid ${service.child.pid}):\n${service.output.join('')}`);
} finally {
  await cleanup();
}
process.exit(failed ? 1 : 0);

/** The service as a child in its own process group (detached), so strays can be found and killed. */
async function startService() {
  const port = await freePort();
  const child = spawn(process.execPath, [MAIN], {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      API_KEYS: API_KEY,
      RATE_LIMIT: 'off',
    },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  groups.add(child.pid);
  const output = []; // the last lines, shown when something fails
  const keep = (chunk) => output.push(String(chunk)) > 40 && output.shift();
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  let exitedWith = null;
  void exited.then((status) => (exitedWith = status));
  return {
    child,
    base: `http://127.0.0.1:${port}`,
    output,
    exited,
    exitedWith: () => exitedWith,
    startedAt: Date.now(),
  };
}

/** Polls /readyz until 200; returns ms since the process was spawned. Fails fast if it exits. */
async function waitReady(svc) {
  while (Date.now() - svc.startedAt < READY_TIMEOUT_MS) {
    const exit = svc.exitedWith();
    if (exit !== null)
      throw new Error(`the service exited before it was ready (code ${exit.code}, signal ${exit.signal})`);
    const response = await fetch(`${svc.base}/readyz`, { signal: AbortSignal.timeout(2000) }).catch(() => null);
    if (response?.status === 200) return Date.now() - svc.startedAt;
    await sleep(100);
  }
  throw new Error(`the service was not ready within ${READY_TIMEOUT_MS} ms`);
}

/** CLIENTS loops sending creates back to back, each with a unique name, until stop(). */
function driveCreates(svc, run) {
  let stopped = false;
  const outcome = { acknowledged: [], otherAnswers: {}, cutOff: 0 };
  const client = async (c) => {
    for (let seq = 0; !stopped; seq++) {
      const sent = { name: `crash r${run} c${c} #${seq} ${randomBytes(4).toString('hex')}`, categoryId: 1 + (seq % 7) };
      try {
        const response = await fetch(`${svc.base}/v1/pets`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${API_KEY}`, 'Content-Type': 'application/json' },
          body: JSON.stringify(sent),
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        const text = await response.text(); // a 201 counts only once its whole body arrived
        if (response.status !== 201) {
          outcome.otherAnswers[response.status] = (outcome.otherAnswers[response.status] ?? 0) + 1;
          continue;
        }
        const pet = JSON.parse(text);
        // The answer itself must be right, or "found with the same content" would prove little.
        if (
          pet.name !== sent.name ||
          pet.categoryId !== sent.categoryId ||
          pet.status !== 'available' ||
          !Number.isSafeInteger(pet.id)
        ) {
          throw new Error(`201 with unexpected content for ${JSON.stringify(sent)}: ${text}`);
        }
        outcome.acknowledged.push(pet);
      } catch (error) {
        if (error instanceof SyntaxError || String(error?.message).startsWith('201 with')) throw error;
        // Connection reset or aborted: normal once the process is killed, a problem before.
        if (stopped) outcome.cutOff++;
        else outcome.otherAnswers.network = (outcome.otherAnswers.network ?? 0) + 1;
        if (!stopped) await sleep(50);
      }
    }
  };
  const done = Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c))).then(() => outcome);
  done.catch(() => undefined); // awaited after the kill; until then a rejection must not crash us
  return { stop: () => (stopped = true), done };
}

/** Every pet, paging GET /v1/pets?limit=100 along the Link rel="next" header. Map id -> pet. */
async function listAllPets(svc) {
  const pets = new Map();
  const deadline = Date.now() + VERIFY_TIMEOUT_MS;
  for (let next = '/v1/pets?limit=100'; next !== null;) {
    if (Date.now() > deadline) throw new Error(`listing every pet took more than ${VERIFY_TIMEOUT_MS} ms`);
    const response = await fetch(svc.base + next, {
      headers: { Authorization: `Bearer ${API_KEY}` },
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    if (response.status !== 200) throw new Error(`GET ${next}: ${response.status} ${await response.text()}`);
    for (const pet of await response.json()) pets.set(pet.id, pet);
    next = /<([^>]+)>\s*;\s*rel="next"/.exec(response.headers.get('link') ?? '')?.[1] ?? null;
  }
  return pets;
}

/** The pid of the postgres holding our cluster, from its postmaster.pid, if it runs. */
function runningPostmaster() {
  const pidFile = path.join(clusterDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return null;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  const ours = Number.isInteger(pid) && pid > 0 && isRunning(pid) && readCmdline(pid).includes(clusterDir);
  return ours ? pid : null;
}

/** Once, whoever asks first (the loop's end or a signal handler). */
function cleanup() {
  cleaning ??= stopEverything();
  return cleaning;
}

/** SIGTERM the service (it stops its postgres), then make sure nothing of ours is left, then rm. */
async function stopEverything() {
  if (service !== null && service.exitedWith() === null) {
    process.kill(service.child.pid, 'SIGTERM');
    const stopped = await withTimeout(service.exited, EXIT_TIMEOUT_MS, 'the service to stop').then(
      () => true,
      () => false,
    );
    if (!stopped)
      console.error(`the service pid ${service.child.pid} did not stop on SIGTERM within ${EXIT_TIMEOUT_MS} ms`);
  }
  // A postgres still on our cluster (an orphan a failed restart did not stop): fast shutdown first.
  const postmaster = EMBEDDED ? runningPostmaster() : null;
  if (postmaster !== null) {
    console.error(`stopping stray postgres pid ${postmaster}`);
    process.kill(postmaster, 'SIGINT');
    for (let waited = 0; isRunning(postmaster) && waited < EXIT_TIMEOUT_MS; waited += 100) await sleep(100);
  }
  // Whatever is left in the groups we created (a hung service, a postgres that ignored SIGINT).
  for (const group of groups) {
    try {
      process.kill(-group, 'SIGKILL');
      console.error(`killed stray process group ${group}`);
    } catch {
      // ESRCH: the group is empty, as it should be.
    }
  }
  await rm(dataDir, { recursive: true, force: true });
  await rm(buildCopy, { recursive: true, force: true });
}

function isRunning(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

function readCmdline(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
}

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms)),
  );
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A free loopback port: the kernel picks one for a probe socket, which is closed at once. */
function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}
