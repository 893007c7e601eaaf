import { json, authorized, useService } from '../support/server.js';

// Concurrent writers and clients that page to the end and keep polling their last cursor: every
// acknowledged pet must reach every pager. Ids are drawn at INSERT but become visible at COMMIT,
// so without care id 7 can commit after id 8 has been paged past, and a pager never sees it.
const service = useService();
const CREATES = Number(process.env.PAGING_RACE_CREATES ?? 10_000);
const WRITERS = 16;
const PAGERS = 3;

/** Creates `count` pets from `WRITERS` concurrent clients, every other one with an Idempotency-Key. */
async function createConcurrently(count: number): Promise<number[]> {
  const acknowledged: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: WRITERS }, async () => {
      for (let i = next++; i < count; i = next++) {
        const headers = i % 2 === 0 ? { ...json, 'Idempotency-Key': `race-${i}` } : json;
        const response = await fetch(`${service.server.url}/v1/pets`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ name: `racer ${i}`, categoryId: 1 }),
        });
        const body: unknown = await response.json();
        if (response.status !== 201) throw new Error(`create ${i}: ${response.status} ${JSON.stringify(body)}`);
        acknowledged.push(Number(Reflect.get(Object(body), 'id')));
      }
    }),
  );
  return acknowledged;
}

/** Follows rel="next" to the end, then polls the last page's cursor, until `done()` and nothing more follows. */
async function pageToTheEnd(done: () => boolean): Promise<Set<number>> {
  const seen = new Set<number>();
  let cursor: string | null = null;
  for (let finished = false; ;) {
    const query: string = cursor === null ? 'limit=100' : `limit=100&cursor=${cursor}`;
    const response = await fetch(`${service.server.url}/v1/pets?${query}`, { headers: authorized });
    const pets: unknown = await response.json();
    if (response.status !== 200 || !Array.isArray(pets))
      throw new Error(`page: ${response.status} ${JSON.stringify(pets)}`);
    for (const pet of pets) seen.add(Number(Reflect.get(Object(pet), 'id')));
    const next = /cursor=([^&>]+)/.exec(response.headers.get('link') ?? '')?.[1];
    if (next !== undefined) cursor = next;
    else if (finished) return seen;
    // One more pass to the end once the writers are done: whatever was acknowledged is committed.
    else finished = done();
  }
}

// Ten thousand creates take about half a minute alone; a loaded CI machine gets three minutes.
describe('paging while pets are created', () => {
  it(`never skips an acknowledged pet: ${CREATES} concurrent creates, half with Idempotency-Key, ${PAGERS} pagers polling the end`, async () => {
    let writing = true;
    const pagers = Array.from({ length: PAGERS }, () => pageToTheEnd(() => !writing));

    const acknowledged = await createConcurrently(CREATES).finally(() => (writing = false));
    const seenByEach = await Promise.all(pagers);

    const missed = seenByEach.map((seen) => acknowledged.filter((id) => !seen.has(id)));
    console.log(
      `paging race: ${acknowledged.length} creates acknowledged; missed by each pager: ${missed.map((m) => m.length).join(', ')}`,
    );
    expect(acknowledged).toHaveLength(CREATES);
    expect(missed).toEqual(seenByEach.map(() => []));
  }, 180_000);
});
