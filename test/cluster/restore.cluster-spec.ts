import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import pg from 'pg';
import {
  abortedAfter,
  carefulLoad,
  clusterProcesses,
  sharedCluster,
  sleep,
  until,
  type Ack,
  type Observed,
  type Running,
} from '../support/cluster.js';

// The restore drills of docs/operations.md ("Backups and restores"), under a steady load that does
// not pause: 12 clients creating with Idempotency-Key (retrying on a network error, 409 or 5xx) and
// 3 pagers walking every page.
// 1. A mistake undone: a full backup, more creates, a restore point T chosen while creates run,
//    every pet deleted, then `cluster.sh restore T` while the old cluster still runs.
// 2. The cluster lost: every node killed and its data directory removed, then `cluster.sh restore
//    latest` rebuilds it from the repository alone.
// Each checks what the restore promises (docs/api.md): everything acknowledged before the point is
// back, nothing is stored twice, no id means two pets, walks are complete, and no instance needed a
// restart. The old cluster goes: the next cluster file reuses the restored one.

const MINUTES = 60_000;
const CREATORS = 12;
const PAGERS = 3;
// A restore takes the writes away for longer than a failover: the creates retry through it.
const GIVE_UP_MS = 8 * MINUTES;
const RESTORE_TIMEOUT_MS = 10 * MINUTES;
// scripts/cluster/backups.sh: the archive is at most this far behind while the archiver keeps up.
const ARCHIVE_TIMEOUT_MS = 10_000;
// An acknowledgement happens after its commit; clocks of one machine, read by two programs.
const CLOCK_SLACK_MS = 100;

const clusterEnv = sharedCluster(5 * MINUTES);
const run = promisify(execFile);

const report = (line: string): void => {
  process.stdout.write(`restore: ${line}\n`);
};

/** `scripts/cluster/cluster.sh ARGS`: its stdout and its progress lines (stderr). */
async function clusterSh(...args: string[]): Promise<{ stdout: string; stderr: string }> {
  return run('bash', ['scripts/cluster/cluster.sh', ...args], {
    timeout: RESTORE_TIMEOUT_MS,
    maxBuffer: 16 * 1024 * 1024,
  });
}

async function query<T>(sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: clusterEnv().primaryUrl });
  await client.connect();
  try {
    return (await client.query(sql)).rows as T[];
  } finally {
    await client.end();
  }
}

const clusterVariable = (name: string): string => {
  const match = new RegExp(`^${name}=(.*)$`, 'm').exec(readFileSync('.cluster/env', 'utf8'));
  if (match?.[1] === undefined) throw new Error(`.cluster/env has no ${name}`);
  return match[1];
};

const instancePids = (): string[] =>
  clusterEnv().instancePorts.map((_, i) => readFileSync(`.cluster/instance-${i + 1}.pid`, 'utf8').trim());

/** performance.now() of a moment given in milliseconds since the epoch. */
const perfOf = (epochMs: number): number => epochMs - performance.timeOrigin;

/** The primary's clock now: an ISO 8601 time (microseconds, UTC) and the same in performance.now() terms. */
async function primaryClock(): Promise<{ iso: string; at: number }> {
  const [row] = await query<{ iso: string; ms: string }>(`
    WITH now AS (SELECT clock_timestamp() AS t)
    SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS iso, extract(epoch FROM t) * 1000 AS ms FROM now`);
  if (row === undefined) throw new Error('no clock');
  return { iso: row.iso, at: perfOf(Number(row.ms)) };
}

async function acknowledgedAfter(observed: Observed, from: number, count: number, what: string): Promise<void> {
  await until(
    () => Promise.resolve(observed.acks.filter((ack) => ack.at > from).length >= count),
    5 * MINUTES,
    `${count} creates acknowledged ${what}`,
  );
}

/**
 * Polls every node's Patroni `/primary` (what HAProxy's writer port checks) every 100 ms: the first
 * time (ms since the epoch) one answered 200 after a moment when none did.
 */
function watchWriterGate(): Running & { stop(): Promise<number | null> } {
  const ports = [1, 2, 3].map((i) => Number(clusterVariable(`NODE_${i}_REST_PORT`)));
  const aborted = new AbortController();
  let stopping = false;
  let gap = false;
  let opened: number | null = null;
  const poll = (async () => {
    while (!stopping && opened === null) {
      const answers = await Promise.all(
        ports.map((port) =>
          fetch(`http://127.0.0.1:${port}/primary`, {
            method: 'OPTIONS',
            signal: AbortSignal.any([aborted.signal, AbortSignal.timeout(1000)]),
          }).then(
            (response) => response.status,
            () => 0,
          ),
        ),
      );
      if (!answers.includes(200)) gap = true;
      else if (gap) opened = Date.now();
      await sleep(100);
    }
  })();
  return {
    async stop() {
      stopping = true;
      await poll;
      return opened;
    },
    async abort() {
      stopping = true;
      aborted.abort();
      await poll.catch(() => undefined);
    },
  };
}

/** Every page from `url` (a path with its query) to the last, by Link rel="next": the ids returned. */
async function walkFrom(url: string): Promise<number[]> {
  const ids: number[] = [];
  let next: string | null = url;
  while (next !== null) {
    const response = await fetch(`${clusterEnv().balancerUrl}${next}`, {
      headers: { Authorization: `Bearer ${clusterEnv().apiKey}` },
    });
    if (response.status !== 200)
      throw new Error(`a page of the walk answered ${response.status}: ${await response.text()}`);
    for (const pet of (await response.json()) as { id: number }[]) ids.push(Number(pet.id));
    next = /<([^>]+)>;\s*rel="next"/.exec(response.headers.get('link') ?? '')?.[1] ?? null;
  }
  return ids;
}

type Stored = { nameOf: Map<number, string>; idsOf: Map<string, number[]>; withRecord: Set<number> };

async function stored(): Promise<Stored> {
  const rows = await query<{ id: string; name: string }>('SELECT id, name FROM pets ORDER BY id');
  const records = await query<{ pet_id: string }>('SELECT pet_id FROM idempotency_keys');
  const idsOf = new Map<string, number[]>();
  for (const row of rows) idsOf.set(row.name, [...(idsOf.get(row.name) ?? []), Number(row.id)]);
  return {
    nameOf: new Map(rows.map((row) => [Number(row.id), row.name])),
    idsOf,
    withRecord: new Set(records.map((row) => Number(row.pet_id))),
  };
}

/** Acknowledged creates that are not stored under their id, or whose idempotency record is gone. */
const missing = (acks: Ack[], store: Stored): Ack[] =>
  acks.filter((ack) => store.nameOf.get(ack.id) !== ack.name || !store.withRecord.has(ack.id));

/** Ids a client or a pager saw with one pet that the store now gives another. */
function reissued(observed: Observed, store: Stored): number {
  return (
    observed.acks.filter((ack) => store.nameOf.has(ack.id) && store.nameOf.get(ack.id) !== ack.name).length +
    [...observed.seen].filter(([id, name]) => store.nameOf.has(id) && store.nameOf.get(id) !== name).length
  );
}

/** Walks begun after `from` that lack one of the pets they must hold: their count, and the first few absences. */
function incompleteWalks(observed: Observed, from: number, mustHold: (began: number) => Ack[]): string[] {
  const problems: string[] = [];
  observed.walks.forEach((walk, i) => {
    const began = observed.walkStarts[i] ?? 0;
    if (began < from) return;
    const returned = new Set(walk);
    const absent = mustHold(began).filter((ack) => !returned.has(ack.id));
    if (absent.length > 0)
      problems.push(`walk ${i}: ${absent.length} absent, e.g. ${JSON.stringify(absent.slice(0, 3))}`);
  });
  return problems;
}

const idsAbove = (stderr: string): number => {
  const floor = /new ids above (\d+)/.exec(stderr)?.[1];
  if (floor === undefined) throw new Error(`cluster.sh restore printed no floor:\n${stderr}`);
  return Number(floor);
};

/** When the restored leader's post_bootstrap set the ids' floor (ms since the epoch), and the floor. */
function floorSetAt(): { at: number; floor: number } {
  const pgDir = readFileSync('.cluster/pgdir', 'utf8').trim();
  const [at, floor] = readFileSync(`${pgDir}/backup/id-floor-set-at`, 'utf8').trim().split(' ').map(Number);
  return { at: at ?? NaN, floor: floor ?? NaN };
}

describe('a mistake undone: every pet deleted, then the cluster restored to a point in time before it', () => {
  const prefix = 'mistake';
  const started = abortedAfter(afterAll);
  let observed: Observed;
  let point: { iso: string; at: number };
  let restoreBegan = 0;
  let restoreEnded = 0;
  let floor = 0;
  let writerOpened: number | null = null;
  let kept: { url: string; afterId: number };
  let keptWalk: number[] = [];
  let pidsBefore: string[] = [];
  let store: Stored;
  let highestBefore = 0;

  beforeAll(async () => {
    pidsBefore = instancePids();
    const running = started(
      carefulLoad(clusterEnv(), prefix, { clients: CREATORS, pagers: PAGERS, giveUpMs: GIVE_UP_MS }),
    );
    await acknowledgedAfter(running.observed, 0, 100, 'before the backup');
    const backup = await clusterSh('backup', 'full');
    report(`full backup ${backup.stdout.trim()} under load`);
    await acknowledgedAfter(running.observed, performance.now(), 100, 'after the backup');
    // A cursor a client keeps across the restore: the next page after the first 20 pets.
    const first = await fetch(`${clusterEnv().balancerUrl}/v1/pets?limit=20`, {
      headers: { Authorization: `Bearer ${clusterEnv().apiKey}` },
    });
    const firstPage = (await first.json()) as { id: number }[];
    kept = {
      url: /<([^>]+)>;\s*rel="next"/.exec(first.headers.get('link') ?? '')?.[1] ?? '',
      afterId: Number(firstPage.at(-1)?.id),
    };
    point = await primaryClock();
    await acknowledgedAfter(running.observed, point.at, 100, 'after the restore point');
    // The mistake, replicated to every node within milliseconds. The lock: no create commits
    // between the two deletes (its record would hold the pet).
    await query(
      'BEGIN; LOCK TABLE pets, idempotency_keys IN EXCLUSIVE MODE; DELETE FROM idempotency_keys; DELETE FROM pets; COMMIT',
    );
    await acknowledgedAfter(running.observed, performance.now(), 20, 'after the mistake');
    highestBefore = Math.max(...running.observed.acks.map((ack) => ack.id), ...running.observed.seen.keys());

    const gate = started(watchWriterGate());
    restoreBegan = performance.now();
    const restore = await clusterSh('restore', point.iso);
    restoreEnded = performance.now();
    for (const line of restore.stderr.trim().split('\n')) report(line);
    floor = idsAbove(restore.stderr);
    writerOpened = await gate.stop();
    await acknowledgedAfter(running.observed, restoreEnded, 100, 'after the restore');
    await until(
      () => Promise.resolve(running.observed.walkStarts.filter((began) => began > restoreEnded).length >= PAGERS),
      3 * MINUTES,
      'walks begun after the restore, ended',
    );
    observed = await running.stop();
    keptWalk = await walkFrom(kept.url);
    store = await stored();
    const firstNew = observed.acks.filter((ack) => ack.id > floor).sort((a, b) => a.at - b.at)[0];
    report(
      `restore to ${point.iso}: writes accepted ${Math.round((firstNew?.at ?? NaN) - restoreBegan)} ms after the command began, the command took ${Math.round(restoreEnded - restoreBegan)} ms; ${observed.acks.length} creates acknowledged (${observed.retries} retries, ${observed.gaveUp} gave up), create answers ${JSON.stringify([...observed.createStatuses])}, page reads ${JSON.stringify([...observed.readStatuses])}, ${observed.walks.length} walks, ${observed.hangs} hangs`,
    );
  }, 15 * MINUTES);

  it('every create acknowledged before the restore point is back under its id, with its idempotency record', () => {
    const beforePoint = observed.acks.filter((ack) => ack.at < point.at - CLOCK_SLACK_MS);
    report(
      `${beforePoint.length} creates acknowledged before the point; missing: ${missing(beforePoint, store).length}`,
    );
    expect(beforePoint.length).toBeGreaterThan(100);
    expect(missing(beforePoint, store)).toEqual([]);
  });

  it('no pet is stored twice, and no id means two pets', () => {
    expect(observed.gaveUp).toBe(0);
    expect([...store.idsOf].filter(([, ids]) => ids.length > 1)).toEqual([]);
    expect(reissued(observed, store)).toBe(0);
  });

  it('every id handed out after the restore is above every id handed out before it, lost ones included', () => {
    // Every create acknowledged once the writer port had the restored leader, from its first on
    // (the command goes on meanwhile, rebuilding the replicas).
    const after = observed.acks.filter((ack) => performance.timeOrigin + ack.at > (writerOpened ?? Infinity));
    const lost = observed.acks.filter((ack) => store.nameOf.get(ack.id) !== ack.name);
    const lowestNew = Math.min(...after.map((ack) => ack.id));
    report(
      `highest id seen before the restore ${highestBefore}, ${lost.length} acknowledged creates undone by it (the highest ${Math.max(...lost.map((ack) => ack.id))}), floor ${floor}, lowest id after ${lowestNew}`,
    );
    expect(after.length).toBeGreaterThan(0);
    expect(floor).toBeGreaterThanOrEqual(highestBefore);
    expect(lowestNew).toBeGreaterThan(Math.max(highestBefore, ...lost.map((ack) => ack.id)));
  });

  // HAProxy's writer port sends connections only to a node whose /primary answers 200; Patroni
  // answers so only once post_bootstrap (set-id-floor.sh) has run and the node holds the leader key.
  it('no node took writes before the ids floor was set', () => {
    const set = floorSetAt();
    report(
      `floor ${set.floor} set at ${new Date(set.at).toISOString()}, writer port open at ${writerOpened === null ? 'never' : new Date(writerOpened).toISOString()}`,
    );
    expect(set.floor).toBe(floor);
    expect(writerOpened).not.toBeNull();
    expect(writerOpened ?? 0).toBeGreaterThanOrEqual(set.at);
    const early = observed.acks.filter((ack) => ack.id > floor && performance.timeOrigin + ack.at < set.at);
    expect(early).toEqual([]);
  });

  it('walks begun after the restore hold every pet acknowledged before the point and every one since the restore', () => {
    const beforePoint = observed.acks.filter((ack) => ack.at < point.at - CLOCK_SLACK_MS);
    const problems = incompleteWalks(observed, restoreEnded, (began) => [
      ...beforePoint,
      ...observed.acks.filter((ack) => ack.id > floor && ack.at < began),
    ]);
    report(
      `${observed.walks.filter((_, i) => (observed.walkStarts[i] ?? 0) > restoreEnded).length} walks begun after the restore; incomplete: ${problems.length}`,
    );
    expect(problems).toEqual([]);
  });

  it('a cursor kept from before the restore pages on exactly: every pet after it, none twice', () => {
    const must = [
      ...observed.acks.filter((ack) => ack.at < point.at - CLOCK_SLACK_MS && ack.id > kept.afterId),
      ...observed.acks.filter((ack) => ack.id > floor),
    ];
    const returned = new Set(keptWalk);
    report(`the kept cursor (after id ${kept.afterId}) walked ${keptWalk.length} pets; ${must.length} it must hold`);
    expect(must.filter((ack) => !returned.has(ack.id))).toEqual([]);
    expect(returned.size).toBe(keptWalk.length);
    expect(keptWalk.every((id, i) => i === 0 || id > (keptWalk[i - 1] ?? 0))).toBe(true);
  });

  it('the restore is answered honestly (503 with Retry-After, never a 500 or a hang), and no instance needed a restart', async () => {
    expect(observed.dishonest).toEqual([]);
    expect(observed.dishonestReads).toEqual([]);
    expect(observed.hangs).toBe(0);
    expect(instancePids()).toEqual(pidsBefore);
    for (const port of clusterEnv().instancePorts)
      expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
  });

  it('the restored cluster is whole, and its repository passes pgbackrest check and verify', async () => {
    // Whole as restore left it; a replica's lag may pass the bound for a moment under the creates.
    await until(() => clusterSh('healthy').then(() => true), 2 * MINUTES, 'three healthy nodes');
    const checked = await clusterSh('check');
    expect(checked.stdout).toContain('status: ok');
  });
});

describe('the cluster lost: every node killed and its data directory removed, rebuilt from the repository alone', () => {
  const prefix = 'lost';
  const started = abortedAfter(afterAll);
  let observed: Observed;
  let lostAt = 0;
  let restoreBegan = 0;
  let restoreEnded = 0;
  let floor = 0;
  let pidsBefore: string[] = [];
  let store: Stored;
  let highestBefore = 0;
  let left: string[] = [];

  beforeAll(async () => {
    pidsBefore = instancePids();
    const running = started(
      carefulLoad(clusterEnv(), prefix, { clients: CREATORS, pagers: PAGERS, giveUpMs: GIVE_UP_MS }),
    );
    await acknowledgedAfter(running.observed, 0, 100, 'before the backup');
    report(
      `backup ${(await clusterSh('backup', 'incr')).stdout.trim()} under load (incremental; full when the repository has none)`,
    );
    // Creates for two and a half archive timeouts after it: the backup ended with a WAL switch, so
    // the loss falls half-way between two of archive_timeout's switches, not just after one.
    const from = performance.now();
    await acknowledgedAfter(running.observed, from, 200, 'after the backup');
    await until(
      () => Promise.resolve(performance.now() - from > 2.5 * ARCHIVE_TIMEOUT_MS),
      MINUTES,
      'creates for two and a half archive timeouts',
    );
    const lost = (await clusterSh('lose-nodes')).stdout.trim();
    // When the last process of the nodes was gone: nothing is acknowledged after this.
    lostAt = perfOf(Number(/killed at (\d+) ms/.exec(lost)?.[1]));
    report(lost);
    highestBefore = Math.max(...running.observed.acks.map((ack) => ack.id), ...running.observed.seen.keys());

    restoreBegan = performance.now();
    const restore = await clusterSh('restore', 'latest');
    restoreEnded = performance.now();
    for (const line of restore.stderr.trim().split('\n')) report(line);
    floor = idsAbove(restore.stderr);
    await acknowledgedAfter(running.observed, restoreEnded, 100, 'after the restore');
    await until(
      () => Promise.resolve(running.observed.walkStarts.filter((began) => began > restoreEnded).length >= PAGERS),
      3 * MINUTES,
      'walks begun after the restore, ended',
    );
    observed = await running.stop();
    store = await stored();
    const pgDir = readFileSync('.cluster/pgdir', 'utf8').trim();
    left = [...clusterProcesses(pgDir).values()].filter((args) => args.includes(`${pgDir}/archive-end`));
    const firstNew = observed.acks.filter((ack) => ack.id > floor).sort((a, b) => a.at - b.at)[0];
    report(
      `restore of the lost cluster: writes accepted ${Math.round((firstNew?.at ?? NaN) - restoreBegan)} ms after the command began, the command took ${Math.round(restoreEnded - restoreBegan)} ms; ${observed.acks.length} creates acknowledged (${observed.retries} retries, ${observed.gaveUp} gave up), ${observed.walks.length} walks, ${observed.hangs} hangs`,
    );
  }, 15 * MINUTES);

  it('everything the archive held is back: every create acknowledged more than the archive timeout before the loss', () => {
    const beforeLoss = observed.acks.filter((ack) => ack.at < lostAt);
    const gone = missing(beforeLoss, store);
    const kept = beforeLoss.filter((ack) => !gone.includes(ack));
    const newestKept = Math.max(...kept.map((ack) => ack.at));
    report(
      `${beforeLoss.length} creates acknowledged before the loss, ${gone.length} not in the archive; recovery point ${Math.round(lostAt - newestKept)} ms before the loss (the newest acknowledgement restored)`,
    );
    expect(beforeLoss.length).toBeGreaterThan(200);
    // The archiver switches segments every archive_timeout while anything is written, and pushes
    // each within a second or so.
    expect(gone.filter((ack) => ack.at < lostAt - ARCHIVE_TIMEOUT_MS - 5000)).toEqual([]);
  });

  it('no pet is stored twice, no id means two pets, and ids after the restore are above every id seen before the loss', () => {
    expect(observed.gaveUp).toBe(0);
    expect([...store.idsOf].filter(([, ids]) => ids.length > 1)).toEqual([]);
    expect(reissued(observed, store)).toBe(0);
    // The old nodes were dead, and their last answers in, before the restore began.
    const after = observed.acks.filter((ack) => ack.at > restoreBegan);
    const lowestNew = Math.min(...after.map((ack) => ack.id));
    report(`highest id seen before the loss ${highestBefore}, floor ${floor}, lowest id after ${lowestNew}`);
    expect(lowestNew).toBeGreaterThan(highestBefore);
  });

  it('walks begun after the restore hold every pet restored and every one created since', () => {
    const restored = observed.acks.filter((ack) => ack.at < lostAt && store.nameOf.get(ack.id) === ack.name);
    const problems = incompleteWalks(observed, restoreEnded, (began) => [
      ...restored,
      ...observed.acks.filter((ack) => ack.id > floor && ack.at < began),
    ]);
    expect(problems).toEqual([]);
  });

  it('no instance needed a restart; the throwaway recovery left nothing running; three healthy nodes', async () => {
    expect(observed.dishonest).toEqual([]);
    expect(observed.hangs).toBe(0);
    expect(instancePids()).toEqual(pidsBefore);
    expect(left).toEqual([]);
    await until(() => clusterSh('healthy').then(() => true), 2 * MINUTES, 'three healthy nodes');
  });
});
