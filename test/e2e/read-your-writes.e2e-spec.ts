import { authorized, json, serversOnOneDatabase, type TestServer } from '../support/server.js';

// "A pet acknowledged to a client is in that client's next list, on any instance." Each instance
// keeps its own settled mark, and pages that end below it read no new one: the instance that did
// not take the create must still serve it to the next list that reaches it.
const cluster = serversOnOneDatabase();
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

describe('read your writes across instances', () => {
  it(`a create acknowledged on one instance is in the next list on each of three (${CLIENTS} clients at once)`, async () => {
    const servers = [await cluster.start(), await cluster.start(), await cluster.start()];
    const missed: string[] = [];

    await Promise.all(
      Array.from({ length: CLIENTS }, async (_, client) => {
        const pager = new PagingClient();
        for (let i = 0; i < CREATES_EACH; i++) {
          const writtenOn = (client + i) % servers.length;
          const id = await create(servers[writtenOn]!, `client ${client} pet ${i}`);
          for (const [listedOn, server] of servers.entries()) {
            if (!(await pager.nextList(server)).includes(id))
              missed.push(`pet ${id}, created on instance ${writtenOn}, not in the next list on instance ${listedOn}`);
          }
        }
      }),
    );

    expect(missed).toEqual([]);
  });
});
