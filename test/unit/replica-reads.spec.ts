import type { NewPet, Pet } from '../../src/domain/pet.js';
import { PetRepository } from '../../src/domain/pet-repository.js';
import { parseLsn, type Replica, ReplicaRoutingPetRepository, ReplicaSet } from '../../src/infrastructure/replica-reads.js';
import { InMemoryPetRepository } from '../support/in-memory-pet-repository.js';
import { aNewPet } from '../support/pets.js';

/** A replica the test steers: its data, how far it has replayed, whether it answers. */
class FakeReplica implements Replica {
  readonly pets_ = new InMemoryPetRepository();
  replayed: string | null = '0/100';
  answers = true;
  constructor(readonly name = 'replica-1:5432') {}
  pets(): PetRepository {
    return this.answers ? this.pets_ : new SilentPets();
  }
  async open(): Promise<void> {}
  async replayLsn(): Promise<string | null> {
    if (!this.answers) return new Promise(() => undefined);
    return this.replayed;
  }
}

/** A store that never answers: a replica stopped with SIGSTOP, a cable pulled. */
class SilentPets extends PetRepository {
  add(): Promise<Pet> {
    return new Promise(() => undefined);
  }
  findById(): Promise<Pet | null> {
    return new Promise(() => undefined);
  }
  list(): Promise<Pet[]> {
    return new Promise(() => undefined);
  }
}

function setUp(options: { maxLagMs?: number } = {}) {
  let now = 1_000_000;
  let primaryLsn = '0/100';
  const primary = new InMemoryPetRepository();
  const replica = new FakeReplica();
  const lines: string[] = [];
  const set = new ReplicaSet(async () => primaryLsn, [replica], {
    maxLagMs: options.maxLagMs ?? 2000,
    readDeadlineMs: 50,
    now: () => now,
    log: (line) => lines.push(line),
  });
  return {
    primary,
    replica,
    set,
    lines,
    pets: new ReplicaRoutingPetRepository(primary, set),
    advance: (ms: number, lsn?: string) => {
      now += ms;
      if (lsn !== undefined) primaryLsn = lsn;
    },
  };
}

const named = (name: string): NewPet => aNewPet({ name });

describe('ReplicaRoutingPetRepository', () => {
  it('reads from the primary until a check has found the replica within the lag bound', async () => {
    const { pets, primary, replica, set } = setUp();
    await primary.add(named('on the primary'));
    await replica.pets_.add(named('on the replica'));

    expect((await pets.list({ limit: 10 })).map((pet) => pet.name)).toEqual(['on the primary']);
    await set.check();
    expect((await pets.list({ limit: 10 })).map((pet) => pet.name)).toEqual(['on the replica']);
  });

  it('creates on the primary, and finds a pet the replica has not replayed yet on the primary (read-your-writes)', async () => {
    const { pets, primary, set } = setUp();
    await set.check();

    const created = await pets.add(named('Rex'));

    expect(await primary.findById(created.id)).toEqual(created);
    expect(await pets.findById(created.id)).toEqual(created);
    expect(await pets.findById(999)).toBeNull();
  });

  it('takes a replica out of reads once it lags more than the bound, and back once it catches up', async () => {
    const { set, replica, advance } = setUp({ maxLagMs: 2000 });
    await set.check();
    expect(set.status()).toEqual([{ name: 'replica-1:5432', usable: true, lagMs: 0 }]);

    // The primary writes on; the replica stays at 0/100, which the primary had passed 1 s ago, then 2.5 s ago.
    advance(1000, '0/200');
    await set.check();
    expect(set.status()[0]).toMatchObject({ usable: true, lagMs: 1000 });
    advance(1500, '0/300');
    await set.check();
    expect(set.status()[0]).toMatchObject({ usable: false, lagMs: 2500 });

    replica.replayed = '0/300';
    advance(500);
    await set.check();
    expect(set.status()[0]).toMatchObject({ usable: true, lagMs: 0 });
  });

  it('does not take an idle primary for a lagging replica', async () => {
    const { set, advance } = setUp({ maxLagMs: 2000 });
    for (let i = 0; i < 10; i++) {
      advance(1000);
      await set.check();
    }
    expect(set.status()[0]).toMatchObject({ usable: true, lagMs: 0 });
  });

  it('a replica that stops answering costs a read the deadline, then reads go to the primary until a check sees it back', async () => {
    const { pets, primary, replica, set, lines } = setUp();
    await primary.add(named('on the primary'));
    await set.check();
    replica.answers = false;

    const started = performance.now();
    expect((await pets.list({ limit: 10 })).map((pet) => pet.name)).toEqual(['on the primary']);
    const first = performance.now() - started;
    const again = performance.now();
    expect(await pets.findById(1)).toMatchObject({ name: 'on the primary' });
    const second = performance.now() - again;

    expect(first).toBeGreaterThanOrEqual(45);
    expect(first).toBeLessThan(500);
    expect(second).toBeLessThan(20);
    await set.check();
    expect(set.status()[0]?.usable).toBe(false);

    replica.answers = true;
    await set.check();
    expect(set.status()[0]?.usable).toBe(true);
    expect(lines).toEqual([
      'Replica replica-1:5432 serves reads again: answers within the lag bound',
      'Replica replica-1:5432 taken out of reads: a read failed: no answer within 50 ms',
      'Replica replica-1:5432 serves reads again: answers within the lag bound',
    ]);
  });
});

describe('parseLsn', () => {
  it('orders WAL positions as PostgreSQL does', () => {
    expect(parseLsn('0/16B3748') < parseLsn('0/16B3749')).toBe(true);
    expect(parseLsn('1/0') > parseLsn('0/FFFFFFFF')).toBe(true);
    expect(() => parseLsn('nonsense')).toThrow('not an LSN');
  });
});
