import { jest } from '@jest/globals';
import type { NewPet, Pet } from '../../../../../src/domain/pets/pet.js';
import { PetRepository, type PetListQuery } from '../../../../../src/domain/pets/pet-repository.js';
import {
  parseLsn,
  type Replica,
  ReplicaSet,
  type WalPosition,
} from '../../../../../src/infrastructure/platform/database/replica-set.js';
import { ReplicaBehindError } from '../../../../../src/infrastructure/pets/replica-pet-repository.js';
import { ReplicaRoutingPetRepository } from '../../../../../src/infrastructure/pets/replica-pet-repository.js';
import { WalHighWaterMark } from '../../../../../src/infrastructure/pets/high-water-marks.js';
import { InMemoryPetRepository } from '../../../../support/in-memory-pet-repository.js';
import { aNewPet } from '../../../../support/pets.js';
import { StoreUnavailableError } from '../../../../../src/application/platform/store-unavailable-error.js';

/**
 * A replica the test steers: its data, how far it has replayed, whether it answers. Like the real
 * one, it has no reads until a check has opened its pool, and it serves a page under a mark only
 * when it has replayed past the mark's position.
 */
class FakeReplica implements Replica<PetRepository> {
  readonly stored = new InMemoryPetRepository();
  /** null: the server is not a standby, so it has no replay position. */
  replayed: string | null = '0/100';
  /** The timeline its WAL receiver follows (null: not known, as for a role that may not read it). */
  timeline: number | null = 1;
  /** silent: stopped (SIGSTOP, a pulled cable), nothing comes back; refusing: down, connections are refused. */
  health: 'up' | 'silent' | 'refusing' = 'up';
  poolOpen = false;
  constructor(readonly name = 'replica-1:5432') {}

  reads(): PetRepository | null {
    if (!this.poolOpen) return null;
    if (this.health === 'silent') return new SilentPets();
    if (this.health === 'refusing') return new UnavailablePets();
    return new ReplayCheckingPets(this.stored, () => this.replayed);
  }

  async open(): Promise<void> {
    if (this.poolOpen) return;
    await this.answer();
    this.poolOpen = true;
  }

  async replayPosition(): Promise<WalPosition | null> {
    await this.answer();
    return this.replayed === null ? null : { lsn: this.replayed, timeline: this.timeline };
  }

  private answer(): Promise<void> {
    if (this.health === 'silent') return new Promise(() => undefined);
    if (this.health === 'refusing') return Promise.reject(new Error('connection refused'));
    return Promise.resolve();
  }
}

/** The replica's data, read as TypeOrmReplicaPetRepository reads it: a page under a mark only once replayed past it. */
class ReplayCheckingPets extends PetRepository {
  constructor(
    private readonly stored: PetRepository,
    private readonly replayed: () => string | null,
  ) {
    super();
  }
  add(pet: NewPet): Promise<Pet> {
    return this.stored.add(pet);
  }
  findById(id: number): Promise<Pet | null> {
    return this.stored.findById(id);
  }
  list(query: PetListQuery): Promise<Pet[]> {
    const replayed = this.replayed();
    const position = query.upTo instanceof WalHighWaterMark ? query.upTo.lsn : undefined;
    if (position !== undefined && replayed !== null && parseLsn(replayed) < parseLsn(position))
      return Promise.reject(new ReplicaBehindError(position));
    return this.stored.list(query);
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

/** A promise, and whether it has settled yet. */
function settling<T>(promise: Promise<T>): { promise: Promise<T>; settled: () => boolean } {
  let settled = false;
  void promise.finally(() => (settled = true)).catch(() => undefined);
  return { promise, settled: () => settled };
}

/** A store whose connections are refused, as the TypeORM adapter reports it. */
class UnavailablePets extends PetRepository {
  add(): Promise<Pet> {
    return Promise.reject(new StoreUnavailableError());
  }
  findById(): Promise<Pet | null> {
    return Promise.reject(new StoreUnavailableError());
  }
  list(): Promise<Pet[]> {
    return Promise.reject(new StoreUnavailableError());
  }
}

/** The primary's WAL position as the checks read it. A slow primary holds each query until it is told to answer. */
class FakePrimaryWal {
  lsn = '0/100';
  timeline = 1;
  answers = true;
  slow = false;
  /** The most position queries that were waiting on the primary at one time. */
  mostWaiting = 0;
  private readonly waiting: (() => void)[] = [];

  readonly position = async (): Promise<WalPosition> => {
    if (!this.answers) throw new Error('connection refused');
    if (this.slow) {
      await new Promise<void>((resolve) => {
        this.waiting.push(resolve);
        this.mostWaiting = Math.max(this.mostWaiting, this.waiting.length);
      });
    }
    return { lsn: this.lsn, timeline: this.timeline };
  };

  answerWaiting(): void {
    for (const answer of this.waiting.splice(0)) answer();
  }
}

function setUp(options: { maxLagMs?: number; replicas?: FakeReplica[] } = {}) {
  let now = 1_000_000;
  const primary = new InMemoryPetRepository();
  const wal = new FakePrimaryWal();
  const replica = new FakeReplica();
  const lines: string[] = [];
  const set = new ReplicaSet<PetRepository>(wal.position, options.replicas ?? [replica], {
    maxLagMs: options.maxLagMs ?? 2000,
    readDeadlineMs: 50,
    now: () => now,
    log: (line) => lines.push(line),
  });
  return {
    primary,
    wal,
    replica,
    set,
    lines,
    pets: new ReplicaRoutingPetRepository(primary, set, (replicaPets: PetRepository) => replicaPets),
    /** Moves the clock on, and the primary's WAL position with it when given. */
    advance: (ms: number, lsn?: string) => {
      now += ms;
      if (lsn !== undefined) wal.lsn = lsn;
    },
  };
}

const named = (name: string): NewPet => aNewPet({ name });
const lagOf = (set: ReplicaSet<PetRepository>) =>
  Object.fromEntries(set.status().map((replica) => [replica.name, replica.lagMs]));
const pendingTimers = () => process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length;

describe('ReplicaRoutingPetRepository', () => {
  it('reads from the primary until a check has found the replica within the lag bound', async () => {
    const { pets, primary, replica, set } = setUp();
    await primary.add(named('on the primary'));
    await replica.stored.add(named('on the replica'));

    expect((await pets.list({ limit: 10 })).map((pet) => pet.name)).toEqual(['on the primary']);
    await set.check();
    expect((await pets.list({ limit: 10 })).map((pet) => pet.name)).toEqual(['on the replica']);
  });

  it('reads a pet by id from the replica once it serves reads', async () => {
    const { pets, primary, replica, set } = setUp();
    await primary.add(named('on the primary'));
    await replica.stored.add(named('on the replica'));
    await set.check();

    expect(await pets.findById(1)).toMatchObject({ id: 1, name: 'on the replica' });
  });

  it('reads a page under a high-water mark from a replica that has replayed past the mark, else from the primary', async () => {
    const { pets, primary, replica, set } = setUp();
    await primary.add(named('on the primary'));
    await replica.stored.add(named('on the replica'));
    replica.replayed = '0/100';
    await set.check();
    const names = async (position: string) =>
      (await pets.list({ limit: 10, upTo: new WalHighWaterMark(10, position, 1) })).map((pet) => pet.name);

    expect(await names('0/101')).toEqual(['on the primary']);
    expect(await names('0/100')).toEqual(['on the replica']);
    replica.replayed = '0/200';
    await set.check();
    expect(await names('0/101')).toEqual(['on the replica']);
  });

  it('reads a page under a mark newer than the last check from a replica that has replayed past it since (creates going on)', async () => {
    const { pets, primary, replica, set } = setUp();
    await primary.add(named('on the primary'));
    await replica.stored.add(named('on the replica'));
    replica.replayed = '0/100';
    await set.check();
    const onPrimary = jest.spyOn(primary, 'list');

    replica.replayed = '0/180';
    const page = await pets.list({ limit: 10, upTo: new WalHighWaterMark(10, '0/180', 1) });

    expect(page.map((pet) => pet.name)).toEqual(['on the replica']);
    expect(onPrimary).not.toHaveBeenCalled();
    expect(set.status()[0]?.usable).toBe(true);
  });

  it('reads a page under a mark that carries no WAL position on the primary: no replica can be shown to hold its pets', async () => {
    const { pets, primary, replica, set } = setUp();
    await primary.add(named('on the primary'));
    await replica.stored.add(named('on the replica'));
    replica.replayed = 'FFFFFFFF/FFFFFFFF';
    await set.check();

    const page = await pets.list({ limit: 10, upTo: { upToId: 10 } });

    expect(page.map((pet) => pet.name)).toEqual(['on the primary']);
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
    const { set, replica, advance, lines } = setUp({ maxLagMs: 2000 });
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
    expect(lines).toEqual([
      'Replica replica-1:5432 serves reads again: answers within the lag bound',
      'Replica replica-1:5432 taken out of reads: lags more than 2000 ms',
      'Replica replica-1:5432 serves reads again: answers within the lag bound',
    ]);
  });

  it('opens the pool of a replica that has caught up to exactly the bound, and reads from it', async () => {
    const { set, pets, replica, advance } = setUp({ maxLagMs: 2000 });
    await replica.stored.add(named('on the replica'));
    replica.replayed = '0/80';
    await set.check();
    advance(2000, '0/200');
    replica.replayed = '0/100';

    await set.check();

    expect(set.status()[0]).toMatchObject({ usable: true, lagMs: 2000 });
    expect(replica.poolOpen).toBe(true);
    expect((await pets.list({ limit: 10 })).map((pet) => pet.name)).toEqual(['on the replica']);
  });

  it('opens no pool on a replica that lags from its first check, and opens it once the replica catches up', async () => {
    const { set, pets, primary, replica, advance } = setUp({ maxLagMs: 2000 });
    await primary.add(named('on the primary'));
    await replica.stored.add(named('on the replica'));
    advance(0, '0/300');

    await set.check();

    expect(replica.poolOpen).toBe(false);
    expect(set.status()[0]).toMatchObject({ usable: false, lagMs: Number.POSITIVE_INFINITY });
    expect((await pets.list({ limit: 10 })).map((pet) => pet.name)).toEqual(['on the primary']);

    replica.replayed = '0/300';
    await set.check();

    expect(replica.poolOpen).toBe(true);
    expect((await pets.list({ limit: 10 })).map((pet) => pet.name)).toEqual(['on the replica']);
  });

  it('measures lag from the newest primary position a replica has replayed past, and forgets positions older than the bound', async () => {
    const caughtUp = new FakeReplica('caught-up:5432');
    const oneBehind = new FakeReplica('one-behind:5432');
    const atTheBound = new FakeReplica('at-the-bound:5432');
    const pastTheBound = new FakeReplica('past-the-bound:5432');
    const { set, advance } = setUp({ maxLagMs: 2000, replicas: [caughtUp, oneBehind, atTheBound, pastTheBound] });
    // The primary was at 0/100 at t = 0 s, 0/200 at 1 s, 0/300 at 2 s and 0/400 at 3 s.
    await set.check();
    for (const lsn of ['0/200', '0/300', '0/400']) {
      advance(1000, lsn);
      await set.check();
    }
    caughtUp.replayed = '0/400';
    oneBehind.replayed = '0/300';
    atTheBound.replayed = '0/250';
    pastTheBound.replayed = '0/1FF';

    advance(0);
    await set.check();

    // 0/250 is past what the primary had at 1 s, not at 2 s: lag 2 s. 0/1FF lacks what the primary had
    // 2 s ago (the bound); how much more it lacks is not kept, only that it is beyond the bound.
    expect(lagOf(set)).toEqual({
      'caught-up:5432': 0,
      'one-behind:5432': 1000,
      'at-the-bound:5432': 2000,
      'past-the-bound:5432': Number.POSITIVE_INFINITY,
    });
    expect(set.status().map((replica) => replica.usable)).toEqual([true, true, true, false]);
  });

  it('serves no reads from a replica that follows another timeline than the primary, until it follows the primary again', async () => {
    const { set, replica, wal, lines } = setUp();
    await set.check();
    expect(set.status()[0]?.usable).toBe(true);

    // A failover: the new primary is on timeline 2, the replica still on 1 (its position, numerically ahead, says nothing).
    wal.timeline = 2;
    replica.replayed = '0/900';
    await set.check();
    const whileOnTheOldTimeline = set.status()[0];
    replica.timeline = 2;
    await set.check();

    expect(whileOnTheOldTimeline).toMatchObject({ usable: false, lagMs: Number.POSITIVE_INFINITY });
    expect(lines).toContain("Replica replica-1:5432 taken out of reads: follows timeline 1, the primary's is 2");
    expect(set.status()[0]?.usable).toBe(true);
  });

  it("measures the lag on a new timeline from the new primary's positions only", async () => {
    const { set, replica, wal, advance } = setUp({ maxLagMs: 2000 });
    wal.lsn = '0/300';
    replica.replayed = '0/300';
    await set.check();

    // The new primary forked below 0/300 and is at 0/400 a second later. A replica of the new
    // timeline at 0/350 is past the old primary's 0/300, which says nothing of what it lacks now.
    advance(1000, '0/400');
    wal.timeline = 2;
    replica.timeline = 2;
    replica.replayed = '0/350';
    await set.check();

    expect(lagOf(set)).toEqual({ 'replica-1:5432': Number.POSITIVE_INFINITY });
  });

  it('compares positions alone with a replica whose timeline the role may not read', async () => {
    const { set, replica, wal } = setUp();
    replica.timeline = null;
    wal.timeline = 3;

    await set.check();

    expect(set.status()[0]?.usable).toBe(true);
  });

  it('with a zero bound, serves reads only from a replica that has replayed all the primary had written', async () => {
    const { set, replica, advance } = setUp({ maxLagMs: 0 });
    await set.check();
    expect(set.status()[0]).toMatchObject({ usable: true, lagMs: 0 });

    advance(1, '0/200');
    await set.check();
    expect(set.status()[0]).toMatchObject({ usable: false, lagMs: Number.POSITIVE_INFINITY });

    replica.replayed = '0/200';
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

  it('serves reads from a server that has no replay position (not a standby) as not lagging', async () => {
    const { set, pets, replica, advance } = setUp({ maxLagMs: 2000 });
    await replica.stored.add(named('on the replica'));
    replica.replayed = null;
    advance(5000, '0/900');

    await set.check();

    expect(set.status()[0]).toMatchObject({ usable: true, lagMs: 0 });
    expect((await pets.list({ limit: 10 })).map((pet) => pet.name)).toEqual(['on the replica']);
  });

  it('keeps the replicas as they are while the primary does not give its position', async () => {
    const { set, wal, replica, advance } = setUp({ maxLagMs: 2000 });
    await set.check();

    wal.answers = false;
    advance(5000);
    await set.check();
    expect(set.status()[0]).toMatchObject({ usable: true, lagMs: 0 });

    wal.answers = true;
    advance(0, '0/200');
    await set.check();
    expect(set.status()[0]).toMatchObject({ usable: false, lagMs: 5000 });
    replica.replayed = '0/200';
    await set.check();
    expect(set.status()[0]).toMatchObject({ usable: true, lagMs: 0 });
  });

  it('while the primary is gone, reads a page under a mark newer than the last check from a replica that has replayed past it by then', async () => {
    const { pets, primary, replica, set, wal, advance } = setUp();
    await primary.add(named('on the primary'));
    await replica.stored.add(named('on the replica'));
    await set.check();
    // The mark was read after the last check; the replica, just behind it at first, replays the
    // rest of the WAL it received while the page waits for the primary to fail.
    advance(100, '0/200');
    replica.replayed = '0/1FF';
    wal.answers = false;
    const primaryList = jest.spyOn(primary, 'list').mockImplementation(() => {
      replica.replayed = '0/200';
      return Promise.reject(new StoreUnavailableError());
    });

    const page = await pets.list({ limit: 10, upTo: new WalHighWaterMark(10, '0/200', 1) });

    expect(page.map((pet) => pet.name)).toEqual(['on the replica']);
    expect(primaryList).toHaveBeenCalledTimes(1);
  });

  it('while the primary is gone, serves no page from a replica that has not replayed past its mark, and keeps the replica in reads', async () => {
    const { pets, primary, replica, set, wal, advance } = setUp();
    await replica.stored.add(named('on the replica'));
    await set.check();
    advance(100, '0/200');
    replica.replayed = '0/1FF';
    wal.answers = false;
    jest.spyOn(primary, 'list').mockRejectedValue(new StoreUnavailableError());

    await expect(pets.list({ limit: 10, upTo: new WalHighWaterMark(10, '0/200', 1) })).rejects.toBeInstanceOf(
      StoreUnavailableError,
    );
    expect(set.status()[0]?.usable).toBe(true);
    replica.replayed = '0/200';
    expect((await pets.list({ limit: 10, upTo: new WalHighWaterMark(10, '0/200', 1) })).map((pet) => pet.name)).toEqual(
      ['on the replica'],
    );
  });

  it('reads a page from the primary when the server its replica read reaches has not replayed past the mark, though a check saw the replica past it (two replicas behind one balancer)', async () => {
    const { pets, primary, replica, set } = setUp();
    await primary.add(named('on the primary'));
    await replica.stored.add(named('on the replica'));
    replica.replayed = '0/200';
    await set.check();
    // The check reached the replica that is ahead; the read reaches the other one.
    replica.replayed = '0/180';

    const page = await pets.list({ limit: 10, upTo: new WalHighWaterMark(10, '0/200', 1) });

    expect(page.map((pet) => pet.name)).toEqual(['on the primary']);
    expect(set.status()[0]?.usable).toBe(true);
  });

  it('tries a read that finds the replica unavailable once more, and a read that fails otherwise not again', async () => {
    const { pets, replica, set, lines } = setUp();
    const created = await replica.stored.add(named('on the replica'));
    await set.check();
    const reads = jest.spyOn(replica.stored, 'findById').mockRejectedValueOnce(new StoreUnavailableError());

    expect(await pets.findById(created.id)).toEqual(created);
    expect(reads).toHaveBeenCalledTimes(2);
    expect(set.status()[0]?.usable).toBe(true);

    reads.mockClear().mockRejectedValue(new Error('a row of an unexpected shape'));
    await pets.findById(created.id);
    expect(reads).toHaveBeenCalledTimes(1);
    expect(lines.at(-1)).toBe('Replica replica-1:5432 taken out of reads: a read failed: a row of an unexpected shape');
  });

  it('tries no replica after the primary fails a page with no mark, or fails it for another reason than being unavailable', async () => {
    const [first, second] = [new FakeReplica('replica-1:5432'), new FakeReplica('replica-2:5432')];
    const { pets, primary, set } = setUp({ replicas: [first, second] });
    await second.stored.add(named('on the second replica'));
    await set.check();
    const primaryList = jest.spyOn(primary, 'list').mockRejectedValue(new StoreUnavailableError());
    // The first replica fails the read and is taken out; the second still serves reads.
    first.health = 'refusing';

    await expect(pets.list({ limit: 10 })).rejects.toBeInstanceOf(StoreUnavailableError);
    // The second replica has not replayed past 0/200: the page goes to the primary, which fails
    // with a bug while the replica catches up. It is not tried again.
    primaryList.mockImplementation(() => {
      second.replayed = '0/200';
      return Promise.reject(new Error('a bug'));
    });
    const readsOfSecond = jest.spyOn(second, 'reads');
    await expect(pets.list({ limit: 10, upTo: new WalHighWaterMark(10, '0/200', 1) })).rejects.toThrow('a bug');

    expect(readsOfSecond).toHaveBeenCalledTimes(1);
    expect(set.status().map((replica) => replica.usable)).toEqual([false, true]);
  });

  it('while the primary is gone, brings back a replica that failed a read once a check finds it answering with all the primary had', async () => {
    const { pets, primary, replica, set, wal, lines } = setUp();
    await replica.stored.add(named('on the replica'));
    await set.check();
    wal.answers = false;
    jest.spyOn(primary, 'findById').mockRejectedValue(new StoreUnavailableError());
    replica.health = 'refusing';
    await expect(pets.findById(1)).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(set.status()[0]?.usable).toBe(false);

    replica.health = 'up';
    await set.check();

    expect(lines.at(-1)).toBe(
      'Replica replica-1:5432 serves reads again: answers, with all the primary had when it was last seen',
    );
    expect((await pets.findById(1))?.name).toBe('on the replica');
  });

  it('while the primary is gone, serves no reads from a replica that lacks part of what the primary had when last seen', async () => {
    const { replica, set, wal, advance, lines } = setUp();
    await set.check();
    advance(100, '0/300');
    replica.replayed = '0/200';
    await set.check();
    expect(set.status()[0]?.usable).toBe(true);
    wal.answers = false;

    await set.check();

    expect(set.status()[0]).toMatchObject({ usable: false });
    expect(lines.at(-1)).toBe(
      'Replica replica-1:5432 taken out of reads: lacks part of what the primary had when it was last seen',
    );
  });

  it('serves no reads from a replica while the primary has never given a position', async () => {
    const { replica, set, wal, lines } = setUp();
    wal.answers = false;
    replica.replayed = '0/FFFF';

    await set.check();

    expect(set.status()[0]).toMatchObject({ usable: false });
    expect(replica.poolOpen).toBe(false);
    expect(lines).toEqual([]);
  });

  it('takes out a replica that refuses a check, and says why', async () => {
    const { set, replica, lines } = setUp();
    await set.check();

    replica.health = 'refusing';
    await set.check();

    expect(set.status()[0]?.usable).toBe(false);
    expect(lines.at(-1)).toBe('Replica replica-1:5432 taken out of reads: does not answer (connection refused)');
  });

  it('a replica that stops answering costs a read the deadline, then reads go to the primary until a check sees it back', async () => {
    const { pets, primary, replica, set, lines } = setUp();
    await primary.add(named('on the primary'));
    await set.check();
    replica.health = 'silent';

    // Fake timers: the deadline is counted on a clock the test moves, not on a loaded machine's.
    jest.useFakeTimers();
    try {
      const first = settling(pets.list({ limit: 10 }));
      await jest.advanceTimersByTimeAsync(49);
      expect(first.settled()).toBe(false);
      await jest.advanceTimersByTimeAsync(1);
      expect(first.settled()).toBe(true);
      expect((await first.promise).map((pet) => pet.name)).toEqual(['on the primary']);

      // Taken out by that read: the next one goes to the primary with no deadline to wait out.
      const second = settling(pets.findById(1));
      await jest.advanceTimersByTimeAsync(0);
      expect(second.settled()).toBe(true);
      expect(await second.promise).toMatchObject({ name: 'on the primary' });
    } finally {
      jest.useRealTimers();
    }
    await set.check();
    expect(set.status()[0]?.usable).toBe(false);

    replica.health = 'up';
    await set.check();
    expect(set.status()[0]?.usable).toBe(true);
    expect(lines).toEqual([
      'Replica replica-1:5432 serves reads again: answers within the lag bound',
      'Replica replica-1:5432 taken out of reads: a read failed: no answer within 50 ms',
      'Replica replica-1:5432 serves reads again: answers within the lag bound',
    ]);
  });

  it('takes out a replica whose read finds the store unavailable, and reads that pet from the primary', async () => {
    const { pets, primary, replica, set, lines } = setUp();
    await primary.add(named('on the primary'));
    await set.check();

    replica.health = 'refusing';

    expect(await pets.findById(1)).toMatchObject({ name: 'on the primary' });
    expect(set.status()[0]?.usable).toBe(false);
    expect(lines.at(-1)).toBe('Replica replica-1:5432 taken out of reads: a read found it unavailable');
  });

  it('spreads reads over the usable replicas in turn, and takes out only the one whose read failed', async () => {
    const first = new FakeReplica('first:5432');
    const second = new FakeReplica('second:5432');
    await first.stored.add(named('on the first'));
    await second.stored.add(named('on the second'));
    const { pets, primary, set } = setUp({ replicas: [first, second] });
    await primary.add(named('on the primary'));
    await set.check();
    const readName = async () => (await pets.findById(1))?.name;

    expect([await readName(), await readName(), await readName()]).toEqual([
      'on the first',
      'on the second',
      'on the first',
    ]);

    second.health = 'refusing';
    expect(await readName()).toBe('on the primary');

    expect(set.status().map((replica) => [replica.name, replica.usable])).toEqual([
      ['first:5432', true],
      ['second:5432', false],
    ]);
    expect([await readName(), await readName()]).toEqual(['on the first', 'on the first']);
  });

  it('leaves no deadline timer running once the replica has answered', async () => {
    const { set } = setUp();
    const before = pendingTimers();

    await set.check();

    expect(pendingTimers()).toBe(before);
  });
});

describe('ReplicaSet.checkUnlessChecking (what the periodic checks call)', () => {
  it('does not start a check while the previous one still waits for the primary, and checks again once it is done', async () => {
    const { set, wal, replica } = setUp();
    wal.slow = true;

    const first = set.checkUnlessChecking();
    await set.checkUnlessChecking();
    await set.checkUnlessChecking();

    expect(wal.mostWaiting).toBe(1);
    expect(set.status()[0]?.usable).toBe(false);

    wal.slow = false;
    wal.answerWaiting();
    await first;
    expect(set.status()[0]?.usable).toBe(true);

    replica.health = 'refusing';
    await set.checkUnlessChecking();
    expect(set.status()[0]?.usable).toBe(false);
  });
});

describe('parseLsn', () => {
  it('orders WAL positions as PostgreSQL does', () => {
    expect(parseLsn('0/16B3748') < parseLsn('0/16B3749')).toBe(true);
    expect(parseLsn('1/0') > parseLsn('0/FFFFFFFF')).toBe(true);
    expect(parseLsn('16/B374D848')).toBe(0x16_b374_d848n);
  });

  it('rejects anything that is not a whole LSN', () => {
    for (const text of ['nonsense', 'x0/100', '0/100x', '0/123456789', ''])
      expect(() => parseLsn(text)).toThrow('not an LSN');
  });
});
