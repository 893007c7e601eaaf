import { readFileSync } from 'node:fs';
import pg from 'pg';
import { parse as parseYaml } from 'yaml';
import { getFrom } from '../support/from-address.js';
import {
  abortedAfter,
  balancerServers,
  cluster,
  sharedCluster,
  idempotentCreates,
  mixedLoad,
  until,
} from '../support/cluster.js';

// The whole topology (scripts/cluster/cluster.sh: HAProxy, 3 instances, three PostgreSQL nodes
// under Patroni behind HAProxy's writer and reader ports, Redis), measured through the balancer under steady load. The figures are
// logged; the guarantees are asserted.

const MINUTES = 60_000;

const clusterEnv = sharedCluster(5 * MINUTES);

const report = (line: string): void => {
  process.stdout.write(`cluster: ${line}\n`);
};

async function primaryQuery<T>(sql: string, parameters: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: clusterEnv().primaryUrl });
  await client.connect();
  try {
    return (await client.query(sql, parameters)).rows as T[];
  } finally {
    await client.end();
  }
}

describe('client addresses behind the balancer', () => {
  it(
    'blocks the address that sent wrong keys, not every client of the balancer; forged X-Forwarded-For straight to an instance changes nothing',
    async () => {
      const viaBalancer = `${clusterEnv().balancerUrl}/v1/pets`;
      let tries = 0;
      for (let status = 0; status !== 429; tries++) {
        if (tries > 40) throw new Error('127.0.0.2 was never limited');
        status = (await getFrom('127.0.0.2', viaBalancer, { Authorization: `Bearer wrong-${tries}` })).status;
      }
      report(`127.0.0.2 got 429 after ${tries} wrong keys through the balancer`);

      expect((await getFrom('127.0.0.3', viaBalancer, { Authorization: 'Bearer wrong' })).status).toBe(401);
      // Straight to an instance, which trusts only the balancer's address (127.0.0.1): the blocked
      // client cannot claim to be someone else, and another client cannot claim to be it.
      const direct = `http://127.0.0.1:${clusterEnv().instancePorts[0]}/v1/pets`;
      expect(
        (await getFrom('127.0.0.2', direct, { Authorization: 'Bearer wrong', 'X-Forwarded-For': '127.0.0.9' })).status,
      ).toBe(429);
      expect(
        (await getFrom('127.0.0.3', direct, { Authorization: 'Bearer wrong', 'X-Forwarded-For': '127.0.0.2' })).status,
      ).toBe(401);
    },
    MINUTES,
  );
});

/** Resolves once `count()` has grown by `more` from now. */
function grown(count: () => number, more: number, what: string): Promise<number> {
  const from = count();
  return until(() => Promise.resolve(count() >= from + more), MINUTES, `${more} ${what}`);
}

describe('instances come and go under steady load', () => {
  const started = abortedAfter(afterEach);

  it(
    'a rolling restart of every instance fails no request',
    async () => {
      const load = started(mixedLoad(clusterEnv().balancerUrl, clusterEnv().apiKey, 12));
      await grown(() => load.outcomes.ok, 100, 'requests answered before the first restart');
      for (let i = 1; i <= clusterEnv().instancePorts.length; i++) {
        const stopped = performance.now();
        // SIGTERM: /readyz turns 503 for SHUTDOWN_DELAY_SECONDS (2 s) while the instance still serves;
        // the balancer takes it out after two failed checks (0.5 s apart), then it drains and exits.
        await cluster('stop-instance', String(i));
        await cluster('start-instance', String(i));
        const back = await until(
          async () => (await balancerServers()).get(`app${i}`) === true,
          10_000,
          `app${i} back in the balancer`,
        );
        report(
          `instance ${i}: stopped, restarted and back in the balancer after ${Math.round(performance.now() - stopped)} ms (${Math.round(back)} ms of checks)`,
        );
      }
      await grown(() => load.outcomes.ok, 300, 'requests answered after the last restart');
      const outcomes = await load.stop();

      report(
        `rolling restart: ${outcomes.ok} requests answered, ${outcomes.failed} failed ${JSON.stringify([...outcomes.statuses])}`,
      );
      expect(outcomes.ok).toBeGreaterThan(500);
      expect(outcomes.failed).toBe(0);
    },
    3 * MINUTES,
  );

  it(
    'kill -9 of an instance: the balancer stops sending to it at once, and retried idempotent creates lose and duplicate nothing',
    async () => {
      const creates = started(idempotentCreates(clusterEnv().balancerUrl, clusterEnv().apiKey, 12, 'kill'));
      const acknowledged = (): number => creates.result.acknowledged.size;
      await grown(acknowledged, 50, 'creates acknowledged before the kill');
      await cluster('kill-instance', '2');
      const killed = performance.now();
      const outMs = await until(
        async () => (await balancerServers()).get('app2') === false,
        5_000,
        'app2 out of the balancer',
      );
      report(
        `kill -9 of instance 2: out of the balancer after ${Math.round(outMs)} ms (check interval 500 ms, fall 2)`,
      );
      await grown(acknowledged, 60, 'creates acknowledged with instance 2 out');
      const result = await creates.stop();
      // Prometheus (deploy/prometheus/alerts.yml, every for: at 2 s) sees it too, and sees it back.
      const killedTarget = `127.0.0.1:${clusterEnv().instancePorts[1]}`;
      await until(
        async () => (await instancesDown()).join() === killedTarget,
        30_000,
        'PetstoreInstanceDown firing for instance 2',
      );
      const firedMs = performance.now() - killed;
      await cluster('start-instance', '2');
      const restarted = performance.now();
      await until(async () => (await balancerServers()).get('app2') === true, 10_000, 'app2 back in the balancer');
      await until(async () => (await instancesDown()).length === 0, 30_000, 'PetstoreInstanceDown cleared');
      report(
        `kill -9: PetstoreInstanceDown fired ${Math.round(firedMs)} ms after the kill (2 s scrape, for: 2s), cleared ${Math.round(performance.now() - restarted)} ms after the instance was ready again`,
      );

      const rows = await primaryQuery<{ id: string; name: string }>(
        `SELECT id, name FROM pets WHERE name LIKE 'kill %'`,
      );
      const byName = new Map<string, number[]>();
      for (const row of rows) byName.set(row.name, [...(byName.get(row.name) ?? []), Number(row.id)]);
      const duplicated = [...byName.values()].filter((ids) => ids.length > 1).length;
      const lost = [...result.acknowledged].filter(([name, id]) => byName.get(name)?.[0] !== id).length;
      const unacknowledged = [...byName.keys()].filter((name) => !result.acknowledged.has(name)).length;
      report(
        `kill -9: ${result.acknowledged.size} creates acknowledged (${result.retries} retries), ${result.gaveUp} gave up; ` +
          `${lost} lost, ${duplicated} duplicated, ${unacknowledged} stored but never acknowledged; ${Math.round(performance.now() - killed)} ms after the kill`,
      );
      expect(result.acknowledged.size).toBeGreaterThan(100);
      expect([result.gaveUp, lost, duplicated, unacknowledged]).toEqual([0, 0, 0, 0]);
    },
    2 * MINUTES,
  );
});

/**
 * SELECTs the replicas have committed, summed over the Patroni nodes that are in recovery: the
 * reads they served (HAProxy's reader port spreads the instances' connections over both).
 */
async function transactionsOnReplicas(): Promise<number> {
  let total = 0;
  for (const port of nodePgPorts()) {
    const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', database: 'petstore' });
    await client.connect();
    try {
      const { rows } = await client.query<{ n: string | null }>(
        'SELECT sum(xact_commit)::text AS n FROM pg_stat_database WHERE pg_is_in_recovery()',
      );
      total += Number(rows[0]?.n ?? 0);
    } finally {
      await client.end();
    }
  }
  return total;
}

/** HAProxy's reader port (deploy/haproxy-patroni.cfg): node name → up or not. */
const readerPort = (): Promise<Map<string, boolean>> =>
  balancerServers('.cluster/haproxy-postgres.sock', 'postgres_reader');

/** NODE_<i>_PG_PORT of .cluster/env: each Patroni node's own PostgreSQL. */
function nodePgPorts(): number[] {
  return [...readFileSync('.cluster/env', 'utf8').matchAll(/^NODE_\d+_PG_PORT=(\d+)$/gm)].map((match) =>
    Number(match[1]),
  );
}

describe('reads on the streaming replicas', () => {
  it(
    "read-your-writes: 1,000 creates each followed at once by a GET of the new pet and the client's next list, through the balancer: 0 404s, no pet missing",
    async () => {
      const headers = { Authorization: `Bearer ${clusterEnv().apiKey}`, 'Content-Type': 'application/json' };
      const replicaBefore = await transactionsOnReplicas();
      const statuses = new Map<number, number>();
      const missedInLists: number[] = [];
      await Promise.all(
        Array.from({ length: 10 }, async (_, client) => {
          // The client keeps the cursor of the last page it fetched, and asks again from there.
          let cursor: string | undefined;
          for (let i = 0; i < 100; i++) {
            const created = await fetch(`${clusterEnv().balancerUrl}/v1/pets`, {
              method: 'POST',
              headers,
              body: JSON.stringify({ name: `ryw ${client}-${i}`, categoryId: 3 }),
            });
            const pet = (await created.json()) as { id: number };
            const got = await fetch(`${clusterEnv().balancerUrl}/v1/pets/${pet.id}`, { headers });
            await got.arrayBuffer();
            statuses.set(got.status, (statuses.get(got.status) ?? 0) + 1);

            const listed: number[] = [];
            for (;;) {
              const query = cursor === undefined ? 'limit=100' : `limit=100&cursor=${cursor}`;
              const page = await fetch(`${clusterEnv().balancerUrl}/v1/pets?${query}`, { headers });
              if (page.status !== 200) throw new Error(`list: ${page.status} ${await page.text()}`);
              listed.push(...((await page.json()) as { id: number }[]).map((listedPet) => listedPet.id));
              const next = /cursor=([^&>]+)/.exec(page.headers.get('link') ?? '')?.[1];
              if (next === undefined) break;
              cursor = next;
            }
            if (!listed.includes(pet.id)) missedInLists.push(pet.id);
          }
        }),
      );
      const replicaReads = (await transactionsOnReplicas()) - replicaBefore;

      report(
        `read-your-writes: 1,000 create + GET + next list: ${JSON.stringify([...statuses])} (status, count), ${missedInLists.length} pets missing from the next list; ${replicaReads} transactions on the replicas meanwhile`,
      );
      expect([...statuses]).toEqual([[200, 1000]]);
      expect(missedInLists).toEqual([]);
      // The reads did go to the replicas (and found most pets there), not all to the primary.
      expect(replicaReads).toBeGreaterThan(500);
    },
    2 * MINUTES,
  );

  it(
    'a replica stopped and started again: every read answered, none 5xx, none waiting beyond the 1 s bound',
    async () => {
      const headers = { Authorization: `Bearer ${clusterEnv().apiKey}` };
      const [known] = await primaryQuery<{ id: string }>('SELECT id FROM pets ORDER BY id LIMIT 1');
      let stopping = false;
      const statuses = new Map<string, number>();
      let slowest = 0;
      let reads = 0;
      const clients = Array.from({ length: 8 }, async (_, client) => {
        while (!stopping) {
          const started = performance.now();
          const url =
            client % 2 === 0
              ? `${clusterEnv().balancerUrl}/v1/pets?limit=10`
              : `${clusterEnv().balancerUrl}/v1/pets/${known?.id}`;
          const status = await fetch(url, { headers }).then(
            async (response) => (await response.arrayBuffer(), String(response.status)),
            (error: unknown) => `network: ${String(error)}`,
          );
          slowest = Math.max(slowest, performance.now() - started);
          reads++;
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
        }
      });
      // A step that fails ends the readers too, and Jest with them.
      try {
        // Counted reads, not seconds: as many on a slow machine as on a fast one.
        await grown(() => reads, 1000, 'reads before the stop');
        await cluster('stop-replica');
        const node = `node${readFileSync('.cluster/stopped-replica', 'utf8').trim()}`;
        await until(async () => (await readerPort()).get(node) === false, MINUTES, `${node} out of the reader port`);
        await grown(() => reads, 1000, `reads with ${node} stopped`);
        await cluster('start-replica');
        await until(async () => (await readerPort()).get(node) === true, MINUTES, `${node} back in the reader port`);
        await grown(() => reads, 1000, `reads with ${node} back`);
      } finally {
        stopping = true;
        await Promise.allSettled(clients);
      }

      report(
        `replica stop/start under read load: ${reads} reads ${JSON.stringify([...statuses])}, slowest ${Math.round(slowest)} ms`,
      );
      expect([...statuses.keys()]).toEqual(['200']);
      expect(slowest).toBeLessThan(1000);
    },
    2 * MINUTES,
  );
});

/** PROMETHEUS_URL from .cluster/env: the Prometheus cluster.sh runs on the instances with deploy/prometheus's rules. */
function prometheusUrl(): string {
  const line = readFileSync('.cluster/env', 'utf8')
    .split('\n')
    .find((candidate) => candidate.startsWith('PROMETHEUS_URL='));
  if (line === undefined) throw new Error('.cluster/env has no PROMETHEUS_URL: cluster.sh ran without Prometheus');
  return line.slice('PROMETHEUS_URL='.length);
}

/** `data` of a Prometheus HTTP API answer. */
async function prometheusApi(path: string): Promise<unknown> {
  const response = await fetch(`${prometheusUrl()}/api/v1/${path}`);
  const body: unknown = await response.json();
  if (!response.ok || typeof body !== 'object' || body === null || !('data' in body))
    throw new Error(`Prometheus answered ${response.status} to ${path}`);
  return body.data;
}

function listOf(value: unknown, key: string): unknown[] {
  const list: unknown = typeof value === 'object' && value !== null ? Reflect.get(value, key) : undefined;
  return Array.isArray(list) ? list : [];
}

function field(value: unknown, ...path: string[]): unknown {
  return path.reduce<unknown>(
    (at, key) => (typeof at === 'object' && at !== null ? Reflect.get(at, key) : undefined),
    value,
  );
}

/** The instances the instance-down alert is firing for, by `instance` label. */
async function instancesDown(): Promise<string[]> {
  return listOf(await prometheusApi('alerts'), 'alerts')
    .filter((alert) => field(alert, 'labels', 'alertname') === 'PetstoreInstanceDown')
    .filter((alert) => field(alert, 'state') === 'firing')
    .map((alert) => String(field(alert, 'labels', 'instance')));
}

function equalMaps(a: Map<string, string>, b: Map<string, string>): boolean {
  return a.size === b.size && [...a].every(([key, value]) => b.get(key) === value);
}

/** Values of an instant query, by `instance` label. */
async function queryByInstance(expr: string): Promise<Map<string, string>> {
  const result = listOf(await prometheusApi(`query?query=${encodeURIComponent(expr)}`), 'result');
  return new Map(
    result.map((sample) => [String(field(sample, 'metric', 'instance')), String(field(sample, 'value', '1'))]),
  );
}

describe('Prometheus on the cluster, with the deployed alerting rules', () => {
  it(
    'scrapes every instance and loads every rule; the database and the replica answer every instance; no instance is down',
    async () => {
      const targets = clusterEnv().instancePorts.map((port) => `127.0.0.1:${port}`);
      const everywhere = (value: string): Map<string, string> => new Map(targets.map((target) => [target, value]));

      await until(
        async () => equalMaps(await queryByInstance('up{job="petstore"}'), everywhere('1')),
        15_000,
        'every instance scraped',
      );
      const rules = listOf(await prometheusApi('rules'), 'groups').flatMap((group) => listOf(group, 'rules'));
      expect(rules.map((rule) => field(rule, 'health'))).toEqual(rules.map(() => 'ok'));
      const alertNames = ['alerts.yml', 'patroni-alerts.yml'].flatMap((file) =>
        listOf(parseYaml(readFileSync(`deploy/prometheus/${file}`, 'utf8')), 'groups').flatMap((group) =>
          listOf(group, 'rules').map((rule) => field(rule, 'alert')),
        ),
      );
      expect(alertNames).toContain('PetstoreInstanceDown');
      expect(alertNames).toContain('PatroniNoSynchronousStandby');
      expect(rules.map((rule) => field(rule, 'name'))).toEqual(alertNames);
      expect(await queryByInstance('db_up')).toEqual(everywhere('1'));
      await until(
        async () => equalMaps(await queryByInstance('db_replica_usable'), everywhere('1')),
        15_000,
        'the replica serving reads for every instance',
      );
      expect(await instancesDown()).toEqual([]);
      // Every node's Patroni is scraped too, and exactly one of them is the leader.
      await until(async () => (await queryByInstance('up{job="patroni"}')).size === 3, 15_000, 'every Patroni scraped');
      expect([...(await queryByInstance('up{job="patroni"}')).values()]).toEqual(['1', '1', '1']);
      expect([...(await queryByInstance('sum(patroni_primary{job="patroni"})')).values()]).toEqual(['1']);
    },
    MINUTES,
  );
});
