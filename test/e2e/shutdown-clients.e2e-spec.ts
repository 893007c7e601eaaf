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

/** Sockets close a turn or a few after they are ended: waits for the counts to be `expected`, within a second. */
async function settledTo(expected: Record<string, number>): Promise<Record<string, number>> {
  const until = Date.now() + 1000;
  while (JSON.stringify(resources()) !== JSON.stringify(expected) && Date.now() < until)
    await new Promise((resolve) => setImmediate(resolve));
  return resources();
}

describe('closing the app', () => {
  it("closes every client it opened, the rate limits' Redis client among them: nothing is left to keep the process alive", async () => {
    const before = resources();

    const server = await startServer(database, { rateLimits: 'as configured', redisUrl });
    const open = resources();
    await server.close();

    // The database pool, the settled marks' two Redis clients and the rate limits' one.
    expect(open.TCPSocketWrap ?? 0).toBeGreaterThanOrEqual((before.TCPSocketWrap ?? 0) + 4);
    expect(await settledTo(before)).toEqual(before);
  });
});
