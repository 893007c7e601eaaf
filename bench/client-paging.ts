// `npm run bench:client`: the cost of the client package. The same 10,000 pets paged through, 100
// a page, by @petstore/client's pets.list() and by bare fetch following Link by hand, rounds in
// alternation against one built service; prints the median time of each and their ratio.
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
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 10));
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
    count += ((await response.json()) as unknown[]).length;
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

async function timed(walk: () => Promise<number>): Promise<number> {
  const started = performance.now();
  const count = await walk();
  if (count !== PETS) throw new Error(`paged through ${count} pets, not ${PETS}`);
  return performance.now() - started;
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
        `Node ${process.version}; ${PETS.toLocaleString('en')} pets, ${PAGE_SIZE} a page, ${ROUNDS} rounds after one warm-up each; ` +
          `${pinned ? 'service on CPU 0, this harness on CPU 1' : 'no CPU pinning'}; load average ${loadavg()[0]?.toFixed(2)}`,
      );
      await timed(() => walkWithFetch(server.url));
      await timed(() => walkWithClient(server.url));
      const bare: number[] = [];
      const client: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        // Alternating which goes first, so drift on the machine hits both alike.
        if (round % 2) client.push(await timed(() => walkWithClient(server.url)));
        bare.push(await timed(() => walkWithFetch(server.url)));
        if (!(round % 2)) client.push(await timed(() => walkWithClient(server.url)));
      }
      const ratio = median(client) / median(bare);
      console.log(
        `bare fetch:       median ${median(bare).toFixed(0)} ms (${bare.map((ms) => ms.toFixed(0)).join(' ')})`,
      );
      console.log(
        `@petstore/client: median ${median(client).toFixed(0)} ms (${client.map((ms) => ms.toFixed(0)).join(' ')})`,
      );
      console.log(`client / bare fetch: ${ratio.toFixed(3)}x (bound: 1.1x)`);
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
