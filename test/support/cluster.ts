import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
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

/** HAProxy's view of each server, from its stats socket: name → up or not. */
export async function balancerServers(): Promise<Map<string, boolean>> {
  const text = await new Promise<string>((resolve, reject) => {
    const socket = connect('.cluster/haproxy.sock');
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
    socket.end('show servers state petstore\n');
  });
  const states = new Map<string, boolean>();
  // Data lines: be_id be_name srv_id srv_name srv_addr srv_op_state ... (2 = running).
  for (const line of text.split('\n')) {
    const fields = line.trim().split(/\s+/);
    if (fields[1] === 'petstore' && fields[3] !== undefined) states.set(fields[3], fields[5] === '2');
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
 * Anything but a 2xx, or a network error, is a failure.
 */
export function mixedLoad(baseUrl: string, apiKey: string, clients: number): { stop(): Promise<Outcomes> } {
  const outcomes: Outcomes = { ok: 0, failed: 0, statuses: new Map() };
  const headers = { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' };
  let stopping = false;
  const send = async (url: string, init: RequestInit): Promise<Response | null> => {
    try {
      const response = await fetch(url, init);
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
    async stop() {
      stopping = true;
      await Promise.all(loops);
      return outcomes;
    },
  };
}

export type IdempotentCreates = { acknowledged: Map<string, number>; gaveUp: number; retries: number };

/**
 * Clients that create pets as a careful client does: each create carries an Idempotency-Key and
 * is retried with the same key (and body) on a network error, 409 (still in flight elsewhere) or
 * 5xx, until it is acknowledged (201, or 200 for a replay). acknowledged: pet name → id.
 */
export function idempotentCreates(
  baseUrl: string,
  apiKey: string,
  clients: number,
  prefix: string,
): { stop(): Promise<IdempotentCreates> } {
  const result: IdempotentCreates = { acknowledged: new Map(), gaveUp: 0, retries: 0 };
  let stopping = false;
  const loops = Array.from({ length: clients }, async (_, client) => {
    for (let i = 0; !stopping; i++) {
      const name = `${prefix} ${client}-${i}`;
      const headers = {
        Authorization: `Bearer ${apiKey}`,
        'Content-Type': 'application/json',
        'Idempotency-Key': randomUUID(),
      };
      let id: number | null = null;
      for (let attempt = 0; attempt < 100 && id === null; attempt++) {
        if (attempt > 0) {
          result.retries++;
          await sleep(100);
        }
        try {
          const response = await fetch(`${baseUrl}/v1/pets`, {
            method: 'POST',
            headers,
            body: JSON.stringify({ name, categoryId: 2 }),
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
    async stop() {
      stopping = true;
      await Promise.all(loops);
      return result;
    },
  };
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
      await cluster('up', '3');
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
