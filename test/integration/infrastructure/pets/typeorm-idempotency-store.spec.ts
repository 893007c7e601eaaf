import { expect } from '@jest/globals';
import { IdempotencyConflictError, IdempotencyKeyReusedError } from '../../../../src/application/pets/create-pet.js';
import type { Pet } from '../../../../src/domain/pets/pet.js';
import { TypeOrmIdempotencyStore } from '../../../../src/infrastructure/pets/typeorm-idempotency-store.js';
import { TypeOrmPetRepository } from '../../../../src/infrastructure/pets/typeorm-pet-repository.js';
import type { PetRepository } from '../../../../src/domain/pets/pet-repository.js';
import { openTestDatabase, type TestDatabase } from '../../../support/database.js';
import { aNewPet } from '../../../support/pets.js';

let database: TestDatabase;
let store: TypeOrmIdempotencyStore;

beforeAll(async () => {
  database = await openTestDatabase();
  store = new TypeOrmIdempotencyStore(database.dataSource, new TypeOrmPetRepository(database.dataSource.manager));
});
afterAll(async () => {
  await database.close();
});
beforeEach(async () => {
  await database.reset();
});

const request = { caller: 'caller-a', key: 'key-1', fingerprint: 'body-1' };

/** The create the service runs: store a pet through the repository it is given. */
function createPet(into: PetRepository, name = 'Rex'): Promise<Pet> {
  return into.add(aNewPet({ name }));
}

async function count(table: 'pets' | 'idempotency_keys'): Promise<number> {
  const [row] = await database.dataSource.query<{ n: number }[]>(`SELECT count(*)::int AS n FROM ${table}`);
  return Number(row?.n);
}

describe('TypeOrmIdempotencyStore', () => {
  it('runs the create once and gives a retry with the same key and body the pet it created', async () => {
    const first = await store.once(request, (tx) => createPet(tx));
    const second = await store.once(request, (tx) => createPet(tx, 'never stored'));

    expect(first).toEqual({ replayed: false, pet: expect.objectContaining({ name: 'Rex' }) });
    expect(second).toEqual({ replayed: true, pet: first.pet });
    expect(await count('pets')).toBe(1);
  });

  it('refuses the same key with a different body', async () => {
    await store.once(request, (tx) => createPet(tx));

    await expect(store.once({ ...request, fingerprint: 'body-2' }, (tx) => createPet(tx))).rejects.toBeInstanceOf(
      IdempotencyKeyReusedError,
    );
    expect(await count('pets')).toBe(1);
  });

  it('keeps keys apart per caller', async () => {
    await store.once(request, (tx) => createPet(tx, 'a'));
    const other = await store.once({ ...request, caller: 'caller-b' }, (tx) => createPet(tx, 'b'));

    expect(other.replayed).toBe(false);
    expect(await count('pets')).toBe(2);
  });

  it('answers IdempotencyConflictError while the first request is still in flight', async () => {
    let finish: () => void = () => undefined;
    const inFlight = store.once(request, async (tx) => {
      await new Promise<void>((resolve) => (finish = resolve));
      return createPet(tx);
    });
    await new Promise((resolve) => setTimeout(resolve, 100));

    await expect(store.once(request, (tx) => createPet(tx))).rejects.toBeInstanceOf(IdempotencyConflictError);

    finish();
    await expect(inFlight).resolves.toMatchObject({ replayed: false });
    expect(await count('pets')).toBe(1);
  });

  it('keeps two keys apart whose hashtext values collide: no false conflict while one is in flight', async () => {
    const [hashes] = await database.dataSource.query<{ a: number; b: number }[]>(
      `SELECT hashtext('k176902') AS a, hashtext('k298202') AS b`,
    );
    expect(hashes?.a).toBe(hashes?.b);
    let finish: () => void = () => undefined;
    const inFlight = store.once({ ...request, key: 'k176902' }, async (tx) => {
      await new Promise<void>((resolve) => (finish = resolve));
      return createPet(tx, 'first');
    });
    await new Promise((resolve) => setTimeout(resolve, 100));

    const other = await store.once({ ...request, key: 'k298202' }, (tx) => createPet(tx, 'second'));

    finish();
    await expect(inFlight).resolves.toMatchObject({ replayed: false });
    expect(other.replayed).toBe(false);
    expect(await count('pets')).toBe(2);
  });

  it('writes the pet and its record in one transaction: a failure after the pet keeps neither, and frees the key', async () => {
    await expect(
      store.once(request, async (tx) => {
        await createPet(tx, 'lost');
        throw new Error('crash between the pet and its record');
      }),
    ).rejects.toThrow('crash between the pet and its record');

    expect(await count('pets')).toBe(0);
    expect(await count('idempotency_keys')).toBe(0);
    await expect(store.once(request, (tx) => createPet(tx))).resolves.toMatchObject({ replayed: false });
    expect(await count('pets')).toBe(1);
  });

  it("lets the create's own errors through unchanged", async () => {
    const failure = new Error('Invalid request body: pool is not a known field');

    await expect(store.once(request, () => Promise.reject(failure))).rejects.toBe(failure);
  });

  it('forgets a key after the retention period, and sweeps expired rows as new ones arrive', async () => {
    await store.once(request, (tx) => createPet(tx, 'first'));
    await store.once({ ...request, key: 'key-2' }, (tx) => createPet(tx, 'other'));
    await database.dataSource.query(`UPDATE idempotency_keys SET expires_at = now() - interval '1 second'`);

    const again = await store.once(request, (tx) => createPet(tx, 'second'));

    expect(again.replayed).toBe(false);
    expect(await count('pets')).toBe(3);
    expect(await database.dataSource.query(`SELECT key FROM idempotency_keys`)).toEqual([{ key: 'key-1' }]);
  });

  it('keeps a record for 24 hours', async () => {
    await store.once(request, (tx) => createPet(tx));

    const [row] = await database.dataSource.query<{ seconds: number }[]>(
      `SELECT extract(epoch FROM expires_at - created_at)::int AS seconds FROM idempotency_keys`,
    );
    expect(row?.seconds).toBe(24 * 60 * 60);
  });
});
