// `npm run bench:client`: the cost of the client package. The same 10,000 pets paged through, 100
// a page, by @petstore/client's pets.list() and by bare fetch following Link by hand, rounds in
// alternation against one built service once it is warm; prints the median time of each, their
// ratio, and the median of each round's ratio (the two walks of a round run back to back, so
// drift on the machine between rounds cancels out of it).
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PetstoreClient } from '../packages/client/src/index.js';
import { openBenchDatabase, seedPets } from './database.js';
import { pinThisProcess, startServer } from './servers.js';

const API_KEY = 'bench-key-0123456789';
const PETS = 10_000;
const PAGE_SIZE = 100;
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 20));
/**
 * Walks of each kind, alternating, before any is measured: the service's first hundreds of
 * requests run before its JIT has compiled them, and took several times as long as later ones.
 */
const WARMUP = Math.max(1, Number(process.env.BENCH_WARMUP ?? 5));
// bench/dist/bench/client-paging.js: the repository is three levels up.
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** Bare fetch, as a careful hand-written client pages: follow Link rel="next" until there is none. */
async function walkWithFetch(baseUrl: string): Promise<number> {
  const headers = { Authorization: `Bearer ${API_KEY}` };
  let count = 0;
  let next: string | null = `${baseUrl}/v1/pets?limit=${PAGE_SIZE}`;
  while (next !== null) {
    const response: Response = await fetch(next, { headers });
    if (!response.ok) throw new Error(`bare fetch: ${response.status} ${await response.text()}`);
    // Each pet handed to the caller's loop, as the client's iterator does.
    for (const pet of (await response.json()) as { id: number }[]) if (pet.id > 0) count++;
    const target = /<([^>]+)>;\s*rel="next"/.exec(response.headers.get('link') ?? '')?.[1];
    next = target === undefined ? null : new URL(target, baseUrl).toString();
  }
  return count;
}

async function walkWithClient(baseUrl: string): Promise<number> {
  const petstore = new PetstoreClient({ baseUrl: `${baseUrl}/v1`, apiKey: API_KEY, pageSize: PAGE_SIZE });
  let count = 0;
  for await (const pet of petstore.pets.list()) if (pet.id > 0) count++;
  return count;
}

type Walk = { ms: number; cpuMs: number };

/** Wall time, and this process's CPU time: the client's own cost, apart from the service's. */
async function timed(walk: () => Promise<number>): Promise<Walk> {
  const started = performance.now();
  const cpu = process.cpuUsage();
  const count = await walk();
  if (count !== PETS) throw new Error(`paged through ${count} pets, not ${PETS}`);
  const used = process.cpuUsage(cpu);
  return { ms: performance.now() - started, cpuMs: (used.user + used.system) / 1000 };
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[middle] ?? NaN) : ((sorted[middle - 1] ?? NaN) + (sorted[middle] ?? NaN)) / 2;
};

async function main(): Promise<void> {
  const database = await openBenchDatabase(process.env.DATABASE_URL || undefined);
  const logDir = await mkdtemp(path.join(tmpdir(), 'petstore-bench-client-'));
  const manifest = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  try {
    // Rate limits stay on (with room for every round), so the client reads RateLimit as it would in production.
    const server = await startServer({
      name: 'ours',
      command: ['sh', '-c', manifest.scripts['start:prod'] ?? ''],
      cwd: ROOT,
      env: { DATABASE_URL: database.url, API_KEYS: API_KEY, RATE_LIMIT_PER_MINUTE: '1000000', LOG_LEVEL: 'warn' },
      logFile: path.join(logDir, 'ours.log'),
    });
    try {
      await seedPets(database.url, PETS);
      const pinned = pinThisProcess();
      console.log(
        `Node ${process.version}; ${PETS.toLocaleString('en')} pets, ${PAGE_SIZE} a page, ${ROUNDS} rounds after ${WARMUP} warm-up walks each; ` +
          `${pinned ? 'service on CPU 0, this harness on CPU 1' : 'no CPU pinning'}; load average ${loadavg()[0]?.toFixed(2)}`,
      );
      for (let walk = 0; walk < WARMUP; walk++) {
        await timed(() => walkWithFetch(server.url));
        await timed(() => walkWithClient(server.url));
      }
      const bare: Walk[] = [];
      const client: Walk[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        // Alternating which goes first, so drift on the machine hits both alike.
        if (round % 2) client.push(await timed(() => walkWithClient(server.url)));
        bare.push(await timed(() => walkWithFetch(server.url)));
        if (!(round % 2)) client.push(await timed(() => walkWithClient(server.url)));
      }
      const report = (name: string, walks: Walk[]) =>
        console.log(
          `${name} median ${median(walks.map((w) => w.ms)).toFixed(0)} ms, harness CPU ${median(walks.map((w) => w.cpuMs)).toFixed(0)} ms ` +
            `(each: ${walks.map((w) => w.ms.toFixed(0)).join(' ')})`,
        );
      report('bare fetch:      ', bare);
      report('@petstore/client:', client);
      const ratio = median(client.map((w) => w.ms)) / median(bare.map((w) => w.ms));
      const cpuRatio = median(client.map((w) => w.cpuMs)) / median(bare.map((w) => w.cpuMs));
      const roundRatio = median(client.map((w, round) => w.ms / (bare[round]?.ms ?? NaN)));
      console.log(
        `client / bare fetch: ${ratio.toFixed(3)}x the time (bound: 1.1x), ${cpuRatio.toFixed(3)}x the harness CPU; ` +
          `median of the rounds' ratios ${roundRatio.toFixed(3)}x`,
      );
      if (ratio > 1.1) process.exitCode = 1;
    } finally {
      await server.stop();
    }
  } finally {
    await rm(logDir, { recursive: true, force: true });
    await database.close();
  }
}

await main();
