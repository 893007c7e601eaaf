import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { connect } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** What scripts/cluster/cluster.sh wrote to .cluster/env: ports, URLs, the API key. */
export type ClusterEnv = {
  balancerUrl: string;
  primaryUrl: string;
  replicaUrl: string;
  apiKey: string;
  instancePorts: number[];
};

/** Runs `scripts/cluster/cluster.sh <args>`; its progress lines go to the test's output on failure. */
export async function cluster(...args: string[]): Promise<void> {
  await run('bash', ['scripts/cluster/cluster.sh', ...args], { timeout: 240_000, maxBuffer: 16 * 1024 * 1024 });
}

export function readClusterEnv(): ClusterEnv {
  const values = new Map<string, string>();
  for (const line of readFileSync('.cluster/env', 'utf8').split('\n')) {
    const match = /^(\w+)=(.*)$/.exec(line);
    if (match?.[1] !== undefined && match[2] !== undefined) values.set(match[1], match[2]);
  }
  const get = (name: string): string => {
    const value = values.get(name);
    if (value === undefined) throw new Error(`.cluster/env has no ${name}`);
    return value;
  };
  const instances = Number(get('INSTANCES'));
  return {
    balancerUrl: get('BALANCER_URL'),
    primaryUrl: get('PRIMARY_URL'),
    replicaUrl: get('REPLICA_URL'),
    apiKey: get('API_KEY'),
    instancePorts: Array.from({ length: instances }, (_, i) => Number(get(`INSTANCE_${i + 1}_PORT`))),
  };
}

/**
 * The live processes of the cluster, pid → command line, found from /proc on their own (not from
 * cluster.sh's pid files): a command line naming a path under .cluster/ or the clusters' directory
 * (pgDir), a working directory in one (postgres's children, Redis), or DATA_DIR under .cluster/ (the
 * instances).
 */
export function clusterProcesses(pgDir: string): Map<number, string> {
  const dirs = [path.resolve('.cluster'), pgDir];
  const read = (file: string, how: (file: string) => string): string => {
    try {
      return how(file);
    } catch {
      return ''; // gone meanwhile, or not ours to read
    }
  };
  const found = new Map<number, string>();
  for (const pid of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    const args = read(`/proc/${pid}/cmdline`, (file) => readFileSync(file, 'utf8'))
      .split('\0')
      .join(' ')
      .trim();
    if (args === '') continue; // a zombie or a kernel thread
    const cwd = read(`/proc/${pid}/cwd`, readlinkSync);
    const environment = read(`/proc/${pid}/environ`, (file) => readFileSync(file, 'utf8')).split('\0');
    if (
      dirs.some((dir) => args.includes(`${dir}/`) || cwd === dir || cwd.startsWith(`${dir}/`)) ||
      environment.some((variable) => variable.startsWith(`DATA_DIR=${dirs[0]}/`))
    )
      found.set(Number(pid), args);
  }
  return found;
}

/**
 * HAProxy's view of each server of a backend, from its stats socket: name → up or not. By default
 * the instances behind the balancer; `.cluster/haproxy-postgres.sock` and `postgres_reader` are the
 * database's reader port.
 */
export async function balancerServers(
  socketPath = '.cluster/haproxy.sock',
  backend = 'petstore',
): Promise<Map<string, boolean>> {
  const text = await new Promise<string>((resolve, reject) => {
    const socket = connect(socketPath);
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
    socket.end(`show servers state ${backend}\n`);
  });
  const states = new Map<string, boolean>();
  // Data lines: be_id be_name srv_id srv_name srv_addr srv_op_state ... (2 = running).
  for (const line of text.split('\n')) {
    const fields = line.trim().split(/\s+/);
    if (fields[1] === backend && fields[3] !== undefined) states.set(fields[3], fields[5] === '2');
  }
  return states;
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves once `check` holds, polling every 50 ms; the milliseconds it took. */
export async function until(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<number> {
  const started = performance.now();
  while (!(await check().catch(() => false))) {
    if (performance.now() - started > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(50);
  }
  return performance.now() - started;
}

export type Outcomes = { ok: number; failed: number; statuses: Map<string, number> };

function count(outcomes: Outcomes, what: string, ok: boolean): void {
  if (ok) outcomes.ok++;
  else outcomes.failed++;
  if (!ok) outcomes.statuses.set(what, (outcomes.statuses.get(what) ?? 0) + 1);
}

/**
 * Steady mixed load through the balancer until stop(): `clients` loops, each creating a pet (plain
 * POST, no Idempotency-Key: the balancer does not retry it), getting it back, and listing a page.
 * Anything but a 2xx, or a network error, is a failure. `outcomes` counts as it goes.
 */
export function mixedLoad(
  baseUrl: string,
  apiKey: string,
  clients: number,
): Running & { outcomes: Outcomes; stop(): Promise<Outcomes> } {
  const outcomes: Outcomes = { ok: 0, failed: 0, statuses: new Map() };
  const headers = { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' };
  let stopping = false;
  const aborted = new AbortController();
  const send = async (url: string, init: RequestInit): Promise<Response | null> => {
    try {
      const response = await fetch(url, { ...init, signal: aborted.signal });
      count(outcomes, String(response.status), response.ok);
      return response;
    } catch (error) {
      count(outcomes, `network: ${error instanceof Error ? describeCause(error) : String(error)}`, false);
      return null;
    }
  };
  const loops = Array.from({ length: clients }, async (_, client) => {
    for (let i = 0; !stopping; i++) {
      const created = await send(`${baseUrl}/v1/pets`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ name: `load ${client}-${i}`, categoryId: 1 }),
      });
      const pet: unknown = created?.ok ? await created.json() : await created?.arrayBuffer();
      const id = typeof pet === 'object' && pet !== null && 'id' in pet ? String(pet.id) : null;
      if (id !== null) await (await send(`${baseUrl}/v1/pets/${id}`, { headers }))?.arrayBuffer();
      await (await send(`${baseUrl}/v1/pets?limit=5`, { headers }))?.arrayBuffer();
    }
  });
  return {
    outcomes,
    async stop() {
      stopping = true;
      await Promise.all(loops);
      return outcomes;
    },
    async abort() {
      stopping = true;
      aborted.abort();
      await Promise.allSettled(loops);
    },
  };
}

export type IdempotentCreates = { acknowledged: Map<string, number>; gaveUp: number; retries: number };

/**
 * Clients that create pets as a careful client does: each create carries an Idempotency-Key and
 * is retried with the same key (and body) on a network error, 409 (still in flight elsewhere) or
 * 5xx, until it is acknowledged (201, or 200 for a replay). acknowledged: pet name → id, filled as
 * it goes.
 */
export function idempotentCreates(
  baseUrl: string,
  apiKey: string,
  clients: number,
  prefix: string,
): Running & { result: IdempotentCreates; stop(): Promise<IdempotentCreates> } {
  const result: IdempotentCreates = { acknowledged: new Map(), gaveUp: 0, retries: 0 };
  let stopping = false;
  const aborted = new AbortController();
  const loops = Array.from({ length: clients }, async (_, client) => {
    for (let i = 0; !stopping; i++) {
      const name = `${prefix} ${client}-${i}`;
      const headers = {
        Authorization: `Bearer ${apiKey}`,
        'Content-Type': 'application/json',
        'Idempotency-Key': randomUUID(),
      };
      let id: number | null = null;
      for (let attempt = 0; attempt < 100 && id === null && !aborted.signal.aborted; attempt++) {
        if (attempt > 0) {
          result.retries++;
          await sleep(100);
        }
        try {
          const response = await fetch(`${baseUrl}/v1/pets`, {
            method: 'POST',
            headers,
            body: JSON.stringify({ name, categoryId: 2 }),
            signal: aborted.signal,
          });
          const body: unknown = await response.json().catch(() => null);
          if (
            (response.status === 201 || response.status === 200) &&
            typeof body === 'object' &&
            body !== null &&
            'id' in body
          )
            id = Number(body.id);
          else if (response.status !== 409 && response.status < 500)
            throw new Error(`create answered ${response.status}: ${JSON.stringify(body)}`);
        } catch (error) {
          if (error instanceof Error && error.message.startsWith('create answered')) throw error;
        }
      }
      if (id === null) result.gaveUp++;
      else result.acknowledged.set(name, id);
    }
  });
  return {
    result,
    async stop() {
      stopping = true;
      await Promise.all(loops);
      return result;
    },
    async abort() {
      stopping = true;
      aborted.abort();
      await Promise.allSettled(loops);
    },
  };
}

/** Something a set-up starts and leaves running: a load, a watch. */
export type Running = {
  /** Ends it at once: requests in flight are cancelled, loops end; resolves when they have. */
  abort(): Promise<void>;
};

/**
 * For a describe whose set-up or tests start loads or watches: wrap each in the function this
 * returns, and `hook` (afterAll, or afterEach for what a test starts) aborts whatever is still
 * running. A step that throws half-way (a wait that times out) thus leaves no loop, timer or socket
 * behind, and Jest ends with the failure instead of waiting on them. Aborting what was stopped
 * already does nothing.
 */
export function abortedAfter(hook: typeof afterAll): <T extends Running>(running: T) => T {
  const started = new Set<Running>();
  hook(async () => {
    await Promise.all([...started].map((running) => running.abort()));
    started.clear();
  });
  return (running) => {
    started.add(running);
    return running;
  };
}

/** What the clients of carefulLoad() saw while a fault happened: every answer counted, every acknowledgement kept. */
export type Observed = {
  acks: Ack[];
  gaveUp: number;
  retries: number;
  /** Status (or network error) of every create attempt → count. */
  createStatuses: Map<string, number>;
  /** Every 5xx to a create that was not a 503 with Retry-After and the Error body `unavailable`. */
  dishonest: string[];
  /** Status of every page read → count. */
  readStatuses: Map<string, number>;
  /** Reads answered with anything but 200: when, and what the answer was. */
  failedReads: { at: number; answer: string }[];
  hangs: number;
  /** Each finished walk: the ids it returned, ascending, and every (id, name) it saw. */
  walks: number[][];
  /** When each finished walk sent its first request (performance.now()), in the order of `walks`. */
  walkStarts: number[];
  /** Every read answered with anything but 200 or a 503 with Retry-After and the Error body `unavailable`. */
  dishonestReads: string[];
  seen: Map<number, string>;
};

export type Ack = { name: string; id: number; at: number };

// The longest a request may take: the service's connect (3 s) and statement (2 s) timeouts, with
// slack. Longer is a hang.
const REQUEST_DEADLINE_MS = 10_000;
// A create still unacknowledged after this long (retried all along) counts as given up.
const CREATE_GIVE_UP_MS = 120_000;

function bump(counts: Map<string, number>, key: string): void {
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

/**
 * `clients` careful creators and `pagers` pagers through the balancer until stop(). A creator sends
 * each create with an Idempotency-Key and retries it with the same key and body on a network error,
 * a 409 or a 5xx, after Retry-After (at most 1 s), until it is acknowledged. A pager walks every
 * page (limit=100) by the Link rel="next", retrying a failed page. stop() lets each create in
 * flight finish (so that every stored pet was acknowledged); abort() does not. A create still
 * unacknowledged after `giveUpMs` counts as given up.
 */
export function carefulLoad(
  target: { balancerUrl: string; apiKey: string },
  prefix: string,
  { clients = 12, pagers = 3, giveUpMs = CREATE_GIVE_UP_MS } = {},
): Running & { observed: Observed; stop(): Promise<Observed> } {
  const observed: Observed = {
    acks: [],
    gaveUp: 0,
    retries: 0,
    createStatuses: new Map(),
    dishonest: [],
    readStatuses: new Map(),
    failedReads: [],
    hangs: 0,
    walks: [],
    walkStarts: [],
    dishonestReads: [],
    seen: new Map(),
  };
  let stopping = false;
  const aborted = new AbortController();
  const authorization = `Bearer ${target.apiKey}`;

  async function timedFetch(url: string, init: RequestInit): Promise<Response | string> {
    try {
      const signal = AbortSignal.any([aborted.signal, AbortSignal.timeout(REQUEST_DEADLINE_MS)]);
      return await fetch(url, { ...init, signal });
    } catch (error) {
      // fetch's errors are no `instanceof Error` in Jest's realm: `instanceof` never saw a hang.
      if (fieldOf(error, 'name') === 'TimeoutError') {
        observed.hangs++;
        return 'hang';
      }
      return `network: ${String(fieldOf(fieldOf(error, 'cause'), 'message') ?? error)}`;
    }
  }

  const creators = Array.from({ length: clients }, async (_, client) => {
    for (let i = 0; !stopping; i++) {
      const name = `${prefix} ${client}-${i}`;
      const headers = {
        Authorization: authorization,
        'Content-Type': 'application/json',
        'Idempotency-Key': randomUUID(),
      };
      const body = JSON.stringify({ name, categoryId: 4 });
      const started = performance.now();
      for (let attempt = 0; !aborted.signal.aborted; attempt++) {
        if (performance.now() - started > giveUpMs) {
          observed.gaveUp++;
          break;
        }
        if (attempt > 0) observed.retries++;
        const response = await timedFetch(`${target.balancerUrl}/v1/pets`, { method: 'POST', headers, body });
        if (typeof response === 'string') {
          bump(observed.createStatuses, response.startsWith('network') ? 'network error' : response);
          await sleep(100);
          continue;
        }
        bump(observed.createStatuses, String(response.status));
        const answer: unknown = await response.json().catch(() => null);
        if (
          (response.status === 201 || response.status === 200) &&
          typeof answer === 'object' &&
          answer !== null &&
          'id' in answer
        ) {
          observed.acks.push({ name, id: Number(answer.id), at: performance.now() });
          break;
        }
        if (response.status >= 500) {
          const retryAfter = Number(response.headers.get('retry-after'));
          const code = typeof answer === 'object' && answer !== null && 'code' in answer ? answer.code : undefined;
          if (response.status !== 503 || !(retryAfter > 0) || code !== 'unavailable')
            observed.dishonest.push(
              `${response.status} Retry-After=${response.headers.get('retry-after')} ${JSON.stringify(answer)}`,
            );
          await sleep(Math.min(retryAfter > 0 ? retryAfter * 1000 : 100, 1000));
        } else if (response.status === 409) await sleep(100);
        else throw new Error(`create answered ${response.status}: ${JSON.stringify(answer)}`);
      }
    }
  });

  const walkers = Array.from({ length: pagers }, async () => {
    while (!stopping) {
      const ids: number[] = [];
      const startedAt = performance.now();
      let url: string | null = `${target.balancerUrl}/v1/pets?limit=100`;
      while (url !== null && !stopping) {
        const response = await timedFetch(url, { headers: { Authorization: authorization } });
        const status =
          typeof response === 'string'
            ? response.startsWith('network')
              ? 'network error'
              : response
            : String(response.status);
        bump(observed.readStatuses, status);
        if (typeof response === 'string' || response.status !== 200) {
          const body = typeof response === 'string' ? '' : await response.text();
          const answer = typeof response === 'string' ? response : `${status} ${body}`;
          observed.failedReads.push({ at: performance.now(), answer: answer.slice(0, 300) });
          // A list that cannot know in time says so: 503 unavailable with Retry-After, then the same page again.
          const retryAfter = typeof response === 'string' ? 0 : Number(response.headers.get('retry-after'));
          const honest = status === '503' && retryAfter > 0 && body.includes('"code":"unavailable"');
          if (!honest) observed.dishonestReads.push(answer.slice(0, 300));
          await sleep(honest ? Math.min(retryAfter * 1000, 1000) : 200);
          continue;
        }
        const page = (await response.json()) as { id: number; name: string }[];
        for (const pet of page) {
          ids.push(Number(pet.id));
          observed.seen.set(Number(pet.id), pet.name);
        }
        const next = /<([^>]+)>;\s*rel="next"/.exec(response.headers.get('link') ?? '');
        url = next?.[1] === undefined ? null : `${target.balancerUrl}${next[1]}`;
      }
      if (url === null) {
        observed.walks.push(ids);
        observed.walkStarts.push(startedAt);
      }
    }
  });

  const loops = [...creators, ...walkers];
  return {
    observed,
    async stop() {
      stopping = true;
      await Promise.all(loops);
      return observed;
    },
    async abort() {
      stopping = true;
      aborted.abort();
      await Promise.allSettled(loops);
    },
  };
}

/**
 * What each instance's /readyz and /metrics said until stop(), polled every 250 ms:
 * `primaryMissing` when /readyz answered 503, or 200 naming the missing primary under `degraded` (a
 * replica still serving reads); `dbDown` when db_up was 0.
 */
export function watchInstances(
  instancePorts: number[],
): Running & { stop(): Promise<{ primaryMissing: boolean[]; dbDown: boolean[] }> } {
  const primaryMissing = instancePorts.map(() => false);
  const dbDown = instancePorts.map(() => false);
  let stopping = false;
  const aborted = new AbortController();
  const get = (url: string): Promise<{ status: number; body: string }> =>
    fetch(url, { signal: AbortSignal.any([aborted.signal, AbortSignal.timeout(2000)]) }).then(
      async (response) => ({ status: response.status, body: await response.text() }),
      () => ({ status: 0, body: '' }),
    );
  const polls = instancePorts.map(async (port, i) => {
    while (!stopping) {
      const ready = await get(`http://127.0.0.1:${port}/readyz`);
      if (ready.status === 503 || (ready.status === 200 && /degraded.*primary/.test(ready.body)))
        primaryMissing[i] = true;
      const metrics = await get(`http://127.0.0.1:${port}/metrics`);
      if (/^db_up(\{[^}]*\})? 0$/m.test(metrics.body)) dbDown[i] = true;
      if (!stopping) await sleep(250);
    }
  });
  return {
    async stop() {
      stopping = true;
      await Promise.all(polls);
      return { primaryMissing, dbDown };
    },
    async abort() {
      stopping = true;
      aborted.abort();
      await Promise.allSettled(polls);
    },
  };
}

/** A field of a thrown value, whatever realm made it. */
function fieldOf(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? Reflect.get(value, key) : undefined;
}

function describeCause(error: Error): string {
  return error.cause instanceof Error ? error.cause.message : error.message;
}

/**
 * The cluster the cluster tests share: `cluster.sh up 3` before the first file's tests; each later
 * file reuses it when it is still whole (three healthy PostgreSQL nodes, no replica left stopped,
 * every instance ready), else takes down what is left and brings a new one up. The project's
 * globalTeardown (test/support/cluster-teardown.mjs) takes it down once every file has run.
 * Returns the running cluster's ports and key, readable once it is up.
 */
export function sharedCluster(upTimeoutMs: number): () => ClusterEnv {
  let env: ClusterEnv | undefined;
  beforeAll(async () => {
    if (!(await whole())) {
      await cluster('down');
      // Ended before the hook's own limit: an up that hangs fails with its progress lines.
      await run('bash', ['scripts/cluster/cluster.sh', 'up', '3'], { timeout: upTimeoutMs - 30_000 });
    }
    env = readClusterEnv();
  }, upTimeoutMs);
  return () => {
    if (env === undefined) throw new Error('sharedCluster(): the cluster comes up in beforeAll');
    return env;
  };
}

async function whole(): Promise<boolean> {
  if (!existsSync('.cluster/env') || existsSync('.cluster/stopped-replica')) return false;
  try {
    await cluster('healthy');
    const { instancePorts } = readClusterEnv();
    const ready = await Promise.all(
      instancePorts.map((port) =>
        fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(2000) }).then(
          (response) => response.status === 200,
          () => false,
        ),
      ),
    );
    return ready.every(Boolean);
  } catch {
    return false;
  }
}
