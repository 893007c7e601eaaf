import { openTestDatabase, type TestDatabase } from '../support/database.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { startServer } from '../support/server.js';

let database: TestDatabase;
let ownRedis: TestRedis | null = null;
let redisUrl: string;

beforeAll(async () => {
  database = await openTestDatabase();
  ownRedis = process.env.REDIS_URL ? null : await startRedis();
  redisUrl = process.env.REDIS_URL || (ownRedis?.url ?? '');
});
afterAll(async () => {
  await ownRedis?.stop();
  await database?.close();
});

/** What keeps this process alive, by kind (TCPSocketWrap: a socket, Timeout: a timer, ...), counted. */
function resources(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const kind of process.getActiveResourcesInfo()) counts[kind] = (counts[kind] ?? 0) + 1;
  return counts;
}

/** Waits, within `ms`, for the counts to satisfy `done`; returns them as they are then. */
async function resourcesWhen(done: (counts: Record<string, number>) => boolean, ms: number) {
  const until = Date.now() + ms;
  while (!done(resources()) && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 5));
  return resources();
}
const sockets = (counts: Record<string, number>) => counts.TCPSocketWrap ?? 0;

describe('closing the app', () => {
  it("closes every client it opened, the rate limits' Redis client among them: nothing is left to keep the process alive", async () => {
    const before = resources();

    const server = await startServer(database, { rateLimits: 'as configured', redisUrl });
    // The database pool, the high-water readings' two Redis clients and the rate limits' one. On a
    // loaded machine a Redis client may be between a timed-out connect and its next one: wait for all.
    const open = await resourcesWhen((counts) => sockets(counts) >= sockets(before) + 4, 10_000);
    await server.close();

    expect(sockets(open)).toBeGreaterThanOrEqual(sockets(before) + 4);
    // Sockets close a turn or a few after they are ended.
    const after = await resourcesWhen((counts) => JSON.stringify(counts) === JSON.stringify(before), 1000);
    expect(after).toEqual(before);
  });
});
