import type { QueryRunner } from 'typeorm';
import { TypeOrmPetRepository } from '../../src/infrastructure/pets/typeorm-pet-repository.js';
import { aNewPet } from '../support/pets.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { authorized, json, serversOnOneDatabase, type TestServer } from '../support/server.js';

// "A pet acknowledged to a client is in that client's next list, on any instance", while another
// writer has drawn a lower id and holds its transaction open: a list waits for that writer rather
// than end before the acknowledged pet, on an instance that has listed before and on one that has not.
const cluster = serversOnOneDatabase();
let stalled: QueryRunner | null = null;

afterEach(async () => {
  await stalled?.rollbackTransaction().catch(() => undefined);
  await stalled?.release();
  stalled = null;
});

/** A writer that draws an id with the service's own create statement and holds its transaction. */
async function stallAWriter(): Promise<{ id: number; commit(): Promise<void> }> {
  const runner = cluster.database().dataSource.createQueryRunner();
  stalled = runner;
  await runner.connect();
  // The test decides when it ends, not PostgreSQL's idle limit.
  await runner.query('SET idle_in_transaction_session_timeout = 0');
  await runner.startTransaction();
  const { id } = await new TypeOrmPetRepository(runner.manager).add(aNewPet({ name: 'stalled' }));
  return { id, commit: () => runner.commitTransaction() };
}

async function create(server: TestServer): Promise<number> {
  const response = await fetch(`${server.url}/v1/pets`, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ name: 'acknowledged', categoryId: 1 }),
  });
  const body: unknown = await response.json();
  if (response.status !== 201) throw new Error(`create: ${response.status} ${JSON.stringify(body)}`);
  return Number(Reflect.get(Object(body), 'id'));
}

type Listed = { status: number; ids: number[]; body: unknown };

/** A whole list from the start, following rel="next"; the first answer that is not 200 ends it. */
async function list(server: TestServer): Promise<Listed> {
  const ids: number[] = [];
  let url: string | null = `${server.url}/v1/pets?limit=100`;
  while (url !== null) {
    const response: Response = await fetch(url, { headers: authorized });
    const body: unknown = await response.json();
    if (response.status !== 200 || !Array.isArray(body)) return { status: response.status, ids, body };
    ids.push(...body.map((pet) => Number(Reflect.get(Object(pet), 'id'))));
    const next = /<([^>]+)>; rel="next"/.exec(response.headers.get('link') ?? '')?.[1];
    url = next === undefined ? null : new URL(next, server.url).toString();
  }
  return { status: 200, ids, body: null };
}

/** The list's answer, or null if it has not come within `ms`. */
async function answeredWithin(listing: Promise<Listed>, ms: number): Promise<Listed | null> {
  return Promise.race([listing, new Promise<null>((resolve) => setTimeout(() => resolve(null), ms))]);
}

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

describe.each([
  ['each reading its own marks', false],
  ['sharing their marks through Redis', true],
])('read your writes while a writer stalls, the instances %s', (_, shared) => {
  const start = (): Promise<TestServer> => cluster.start(shared ? { redisUrl: redis.url } : {});

  it('an instance that has listed before waits for the writer, then lists the pet acknowledged meanwhile', async () => {
    const server = await start();
    const before = await create(server);
    expect((await list(server)).ids).toContain(before);
    const writer = await stallAWriter();
    const acknowledged = await create(server);

    const listing = list(server);
    const early = await answeredWithin(listing, 500);
    await writer.commit();
    const listed = await listing;

    // Never a page that looks complete without the acknowledged pet, nor one past the stalled id.
    expect(early).toBeNull();
    expect(listed).toEqual({ status: 200, ids: expect.arrayContaining([before, writer.id, acknowledged]), body: null });
  });

  it('an instance that has not listed yet is not ready, and its lists wait for the writer rather than answer 503', async () => {
    const writer = await stallAWriter();
    const other = await start();
    const acknowledged = await create(other);
    const fresh = await start();

    const readyWhileStalled = (await fetch(`${fresh.url}/readyz`)).status;
    const listing = list(fresh);
    const early = await answeredWithin(listing, 500);
    await writer.commit();
    const listed = await listing;
    const readyAfter = (await fetch(`${fresh.url}/readyz`)).status;

    expect(early).toBeNull();
    expect(listed).toEqual({ status: 200, ids: expect.arrayContaining([writer.id, acknowledged]), body: null });
    expect([readyWhileStalled, readyAfter]).toEqual([503, 200]);
  });
});
