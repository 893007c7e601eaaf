import { startRedis, type TestRedis } from '../support/redis-server.js';
import { authorized, json, serversOnOneDatabase, type TestServer } from '../support/server.js';

// "A pet acknowledged to a client is in that client's next list, on any instance." Each instance
// keeps its own high-water mark, and pages that end below it read no new one: the instance that did
// not take the create must still serve it to the next list that reaches it. With REDIS_URL the
// instances share the readings of their marks; a Redis that stops answering changes nothing here
// but who reads.
const CLIENTS = 4;
const CREATES_EACH = 25;
const LIMIT = 10;

/**
 * A client that pages with rel="next" and keeps the cursor of the last page it fetched, one per
 * instance: `nextList` asks again from there and follows the links to the end.
 */
class PagingClient {
  private readonly cursors = new Map<TestServer, string>();

  async nextList(server: TestServer): Promise<number[]> {
    const ids: number[] = [];
    for (;;) {
      const cursor = this.cursors.get(server);
      const query = cursor === undefined ? `limit=${LIMIT}` : `limit=${LIMIT}&cursor=${cursor}`;
      const response = await fetch(`${server.url}/v1/pets?${query}`, { headers: authorized });
      const pets: unknown = await response.json();
      if (response.status !== 200 || !Array.isArray(pets))
        throw new Error(`page: ${response.status} ${JSON.stringify(pets)}`);
      ids.push(...pets.map((pet) => Number(Reflect.get(Object(pet), 'id'))));
      const next = /cursor=([^&>]+)/.exec(response.headers.get('link') ?? '')?.[1];
      if (next === undefined) return ids;
      this.cursors.set(server, next);
    }
  }
}

async function create(server: TestServer, name: string): Promise<number> {
  const response = await fetch(`${server.url}/v1/pets`, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ name, categoryId: 1 }),
  });
  const body: unknown = await response.json();
  if (response.status !== 201) throw new Error(`create: ${response.status} ${JSON.stringify(body)}`);
  return Number(Reflect.get(Object(body), 'id'));
}

/**
 * CLIENTS clients at once each create CREATES_EACH pets, on the instances in turn, and after each
 * create ask every instance for their next list. `afterCreate` runs after each create with the
 * count so far. Resolves with every pet some next list missed.
 */
async function readYourWrites(
  servers: TestServer[],
  afterCreate: (created: number) => Promise<void> = () => Promise.resolve(),
): Promise<string[]> {
  const missed: string[] = [];
  let created = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, client) => {
      const pager = new PagingClient();
      for (let i = 0; i < CREATES_EACH; i++) {
        const writtenOn = (client + i) % servers.length;
        const id = await create(servers[writtenOn]!, `client ${client} pet ${i}`);
        await afterCreate(++created);
        for (const [listedOn, server] of servers.entries()) {
          if (!(await pager.nextList(server)).includes(id))
            missed.push(`pet ${id}, created on instance ${writtenOn}, not in the next list on instance ${listedOn}`);
        }
      }
    }),
  );
  return missed;
}

async function readiness(server: TestServer): Promise<unknown> {
  return (await fetch(`${server.url}/readyz`)).json();
}

describe('read your writes across instances', () => {
  const cluster = serversOnOneDatabase();

  it(`a create acknowledged on one instance is in the next list on each of three (${CLIENTS} clients at once)`, async () => {
    const servers = [await cluster.start(), await cluster.start(), await cluster.start()];

    expect(await readYourWrites(servers)).toEqual([]);
  });
});

describe('read your writes across instances that share their marks through Redis', () => {
  const cluster = serversOnOneDatabase();
  let redis: TestRedis;
  let servers: TestServer[];
  beforeAll(async () => {
    redis = await startRedis();
    const redisUrl = redis.url;
    servers = [await cluster.start({ redisUrl }), await cluster.start({ redisUrl }), await cluster.start({ redisUrl })];
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it(`a create acknowledged on one instance is in the next list on each of three (${CLIENTS} clients at once)`, async () => {
    expect(await readYourWrites(servers)).toEqual([]);
    expect(await Promise.all(servers.map(readiness))).toEqual(Array(3).fill({ status: 'ok' }));
  });

  it('and while Redis is paused part way, each instance reading its own marks meanwhile, and says so in /readyz', async () => {
    const total = CLIENTS * CREATES_EACH;
    const whilePaused: unknown[] = [];

    const missed = await readYourWrites(servers, async (created) => {
      if (created === Math.round(total / 3)) redis.pause();
      if (created === Math.round((total * 2) / 3)) {
        whilePaused.push(...(await Promise.all(servers.map(readiness))));
        redis.resume();
      }
    });

    expect(missed).toEqual([]);
    expect(whilePaused).toEqual(
      Array(3).fill({
        status: 'ok',
        degraded: [expect.stringContaining('each instance reads its own high-water marks')],
      }),
    );
  });
});
