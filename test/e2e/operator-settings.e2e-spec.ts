import { Writable } from 'node:stream';
import { authorized, json, useService } from '../support/server.js';

// What the paging promise rests on, changed as an operator would while the service runs, on
// sessions its pool opened before: the service keeps every promise, or refuses loudly (a log line
// saying what to run, /readyz 503, lists 503 with Retry-After), never a 200 that skips, never a 500.
// Settings a server, a database or a role carries are changed on servers of the tests' own
// (test/integration/infrastructure/pets/streaming-replica.spec.ts); docs/internals.md has the table.
const lines: string[] = [];
const service = useService({
  log: new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  }),
});

afterEach(async () => {
  await service.database.dataSource.query(
    `ALTER SEQUENCE pets_id_seq CACHE 1; ALTER TABLE pets ENABLE ALWAYS TRIGGER pets_note_id_floor, ENABLE ALWAYS TRIGGER pets_refuse_id`,
  );
  lines.splice(0);
});

async function create(key?: string): Promise<Response> {
  return fetch(`${service.server.url}/v1/pets`, {
    method: 'POST',
    headers: key === undefined ? json : { ...json, 'Idempotency-Key': key },
    body: JSON.stringify({ name: 'Rex', categoryId: 1 }),
  });
}

async function createdId(key?: string): Promise<number> {
  const response = await create(key);
  const body: unknown = await response.json();
  if (response.status !== 201) throw new Error(`create: ${response.status} ${JSON.stringify(body)}`);
  return Number(Reflect.get(Object(body), 'id'));
}

async function list(query: string): Promise<{ status: number; retryAfter: string | null; ids: number[] }> {
  const response = await fetch(`${service.server.url}/v1/pets?${query}`, { headers: authorized });
  const body: unknown = await response.json();
  const ids = Array.isArray(body) ? body.map((pet) => Number(Reflect.get(Object(pet), 'id'))) : [];
  return { status: response.status, retryAfter: response.headers.get('retry-after'), ids };
}

async function ready(): Promise<number> {
  return (await fetch(`${service.server.url}/readyz`)).status;
}

function logged(text: string): string[] {
  return lines.filter((line) => line.includes(text));
}

describe('An operator disables the pets triggers while the service runs', () => {
  it('refuses every list and /readyz, says what to run once, and serves every pet again once they fire ALWAYS', async () => {
    const ids = [await createdId(), await createdId(), await createdId()];
    expect((await list('limit=2')).status).toBe(200);

    await service.database.dataSource.query(`ALTER TABLE pets DISABLE TRIGGER USER`);
    const shortPage = await list('limit=100');
    // A full page below the last mark reads no mark itself: the refusal above forgot it.
    const fullPage = await list('limit=2');
    const readiness = await ready();
    await service.database.dataSource.query(
      `ALTER TABLE pets ENABLE ALWAYS TRIGGER pets_note_id_floor, ENABLE ALWAYS TRIGGER pets_refuse_id`,
    );
    const again = await list('limit=100');

    expect(shortPage).toEqual({ status: 503, retryAfter: '5', ids: [] });
    expect(fullPage).toEqual({ status: 503, retryAfter: '5', ids: [] });
    expect(readiness).toBe(503);
    expect(logged('ALTER TABLE pets ENABLE ALWAYS TRIGGER pets_note_id_floor')).toHaveLength(1);
    expect(again).toEqual({ status: 200, retryAfter: null, ids });
    expect(await ready()).toBe(200);
  });
});

describe('An operator gives the id sequence a cache while the service runs', () => {
  it('acknowledges every create, keyed or not, and lists each in the next page, in id order', async () => {
    await createdId();
    await service.database.dataSource.query(`ALTER SEQUENCE pets_id_seq CACHE 50`);

    const acknowledged: number[] = [];
    const missing: number[] = [];
    await Promise.all(
      [0, 1, 2, 3].map(async (client) => {
        for (let i = 0; i < 10; i++) {
          const id = await createdId(i % 2 === 0 ? `client-${client}-${i}` : undefined);
          acknowledged.push(id);
          const page = await list('limit=100');
          if (!page.ids.includes(id)) missing.push(id);
        }
      }),
    );
    const all = await list('limit=100');

    expect(missing).toEqual([]);
    expect(all.ids).toEqual([...all.ids].sort((a, b) => a - b));
    expect(all.ids).toEqual(expect.arrayContaining(acknowledged));
    expect(logged('caches 50 ids per session')).toHaveLength(1);
  });
});

describe('An operator sets the id sequence back behind the ids stored', () => {
  it('refuses creates and lists with 503 and Retry-After, never a 500, until the sequence is past them again', async () => {
    for (let i = 0; i < 5; i++) await createdId();

    await service.database.dataSource.query(`SELECT setval('pets_id_seq', 1)`);
    const refusedCreate = await create();
    const refusedList = await list('limit=100');
    await service.database.dataSource.query(`SELECT setval('pets_id_seq', (SELECT max(id) FROM pets))`);
    const created = await create();

    expect([refusedCreate.status, refusedCreate.headers.get('retry-after')]).toEqual([503, '5']);
    expect(refusedList).toEqual({ status: 503, retryAfter: '5', ids: [] });
    expect(logged("run SELECT setval('pets_id_seq', (SELECT max(id) FROM pets))").length).toBeGreaterThan(0);
    expect(created.status).toBe(201);
    expect((await list('limit=100')).status).toBe(200);
  });
});
