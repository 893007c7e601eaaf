import { StoreUnavailableError } from '../../../../src/application/platform/store-unavailable-error.js';
import type { SettledMark } from '../../../../src/domain/pets/pet-repository.js';
import { type SharedLookOptions, SharedLooks } from '../../../../src/infrastructure/pets/shared-looks.js';
import type { MarkSnapshot } from '../../../../src/infrastructure/pets/mark-snapshot.js';
import { SharedSettledMarks } from '../../../../src/infrastructure/pets/typeorm-settled-marks.js';
import { REDIS_COMMAND_TIMEOUT_MS } from '../../../../src/infrastructure/platform/rate-limits/flexible-rate-limits.js';
import { InMemoryLookRedis } from '../../../support/in-memory-look-board.js';
import { ScriptedStore } from '../../../support/scripted-store.js';
import { TestClock } from '../../../support/test-clock.js';
import { outcomeOf } from '../../../support/outcome.js';

const MARKS = { waitLimitMs: 8000, minPollMs: 2, maxPollMs: 50 };
const LOOKS: SharedLookOptions = { answerWaitMs: 250, retryMs: 1000 };

/** One instance: its marks, its looks on the shared store, and what it logged. */
type Instance = {
  marks: SharedSettledMarks;
  looks: SharedLooks;
  /** The looks this instance ran on the store itself. */
  looked: number;
  /** Set: this instance's own looks fail (its connection to the store is gone). */
  failure: Error | null;
  log: string[];
};

function setUp({ instances = 3, lookMs = 1, leaseMs = 1000, marks = MARKS } = {}) {
  const clock = new TestClock();
  const store = new ScriptedStore(clock, lookMs);
  const redis = new InMemoryLookRedis(clock, leaseMs);
  const cluster: Instance[] = [];
  for (let i = 0; i < instances; i++) {
    const log: string[] = [];
    const ownLook = (): Promise<MarkSnapshot> => {
      instance.looked++;
      return instance.failure === null ? store.look() : Promise.reject(instance.failure);
    };
    const looks = new SharedLooks(redis.boardFor(), ownLook, LOOKS, clock, (line) => log.push(line));
    const instance: Instance = {
      marks: new SharedSettledMarks(looks.look, marks, clock),
      looks,
      looked: 0,
      failure: null,
      log,
    };
    // As TypeOrmSettledMarks wires them: the looks published by any instance reach the marks waiting here.
    looks.onLook((snapshot) => instance.marks.overheard(snapshot));
    cluster.push(instance);
  }
  return { clock, store, redis, cluster, a: cluster[0]!, b: cluster[1]!, c: cluster[2]! };
}

describe('SharedLooks: the settled marks of several instances through one look board', () => {
  it('answers the asks of every instance made while one looks with its next look: one look, not one each', async () => {
    const { clock, store, a, b, c } = setUp({ lookMs: 5 });
    store.drawn = 1;
    const first = outcomeOf(a.marks.fresh());
    await clock.pass(1);
    // Acknowledged after A's look read the sequence: the asks after it need a look that began later.
    store.drawn = 2;
    const fromB = outcomeOf(b.marks.fresh());
    const fromC = outcomeOf(c.marks.fresh());
    await clock.pass(20);

    expect(first.now()).toMatchObject({ upToId: 1 });
    expect(fromB.now()).toMatchObject({ upToId: 2 });
    expect(fromC.now()).toEqual(fromB.now());
    expect(store.looks).toHaveLength(2);
    expect([a.looked, b.looked, c.looked]).toEqual([2, 0, 0]);
  });

  it('never answers an ask with a look that began before it, however the asks interleave', async () => {
    const { clock, store, cluster } = setUp({ lookMs: 3 });
    const answers: { asked: number; answer: Promise<SettledMark> }[] = [];

    for (let step = 0; step < 60; step++) {
      // A create acknowledged every millisecond; an instance asks at each step, in turn.
      store.drawn++;
      answers.push({ asked: store.drawn, answer: cluster[step % 3]!.marks.fresh() });
      await clock.pass(1);
    }
    await clock.pass(50);

    for (const { asked, answer } of answers) expect((await answer).upToId).toBeGreaterThanOrEqual(asked);
    // One look at a time for all three, back to back: each instance alone would look as often.
    expect(store.looks.length).toBeLessThan(60 / 3 + 10);
  });

  it('answers a mark waiting on one instance with a later look of the instance it waits from, made for another caller', async () => {
    const { clock, store, a, b } = setUp({ lookMs: 5, marks: { ...MARKS, minPollMs: 10_000, maxPollMs: 10_000 } });
    store.drawn = 5;
    store.inFlight = ['3/10'];
    void a.marks.fresh();
    await clock.pass(1);
    // B's ask waits for A's next look, which still lists the create in flight.
    const fromB = outcomeOf(b.marks.fresh());
    await clock.pass(20);
    expect(fromB.now()).toBe('pending');

    store.inFlight = [];
    void a.marks.fresh();
    await clock.pass(10);

    expect(fromB.now()).toMatchObject({ upToId: 5 });
    expect(b.looked).toBe(0);
  });

  it('shares the polls of marks that wait for a create in flight', async () => {
    const shared = setUp();
    const alone = setUp({ instances: 1 });
    for (const { store } of [shared, alone]) store.inFlight = ['3/10'];

    for (const instance of shared.cluster) void instance.marks.fresh().catch(() => undefined);
    void alone.a.marks.fresh().catch(() => undefined);
    await Promise.all([shared.clock.pass(2000), alone.clock.pass(2000)]);

    // Three instances waiting poll the store less often than three would alone: the first poll of a
    // round is looked for by the instance that makes it, the others' by its next look.
    expect(shared.store.looks.length).toBeLessThanOrEqual(alone.store.looks.length * 2 + 2);
  });

  it('looks itself when an answer is lost, and an answer that comes late changes nothing', async () => {
    const { clock, store, redis, a, b } = setUp({ lookMs: 5 });
    void a.marks.fresh();
    await clock.pass(1);
    store.drawn = 4;
    redis.held = [];

    const fromB = outcomeOf(b.marks.fresh());
    await clock.pass(LOOKS.answerWaitMs - 10);
    expect(fromB.now()).toBe('pending');
    await clock.pass(20);
    // Its own look, the answer lost.
    expect(fromB.now()).toMatchObject({ upToId: 4 });
    expect(b.looked).toBe(1);
    store.drawn = 5;
    const again = outcomeOf(b.marks.fresh());
    // The answer to B's first ask comes now, while B asks again: it answers nothing asked after it.
    redis.deliverHeld();
    await clock.pass(20);

    expect(again.now()).toMatchObject({ upToId: 5 });
  });

  it('answers the other instances at once when the looker fails, by their own looks, and its own callers with the error', async () => {
    const { clock, store, a, b } = setUp({ lookMs: 5 });
    store.drawn = 3;
    void a.marks.fresh();
    await clock.pass(1);
    const fromB = outcomeOf(b.marks.fresh());
    a.failure = new StoreUnavailableError();
    const fromA = outcomeOf(a.marks.fresh());
    await clock.pass(20);

    expect(fromA.now()).toBeInstanceOf(StoreUnavailableError);
    expect(fromB.now()).toMatchObject({ upToId: 3 });
    expect(b.looked).toBe(1);
  });

  it('waits for a look of its own however long it takes, and never looks twice for one ask', async () => {
    const { clock, store, a } = setUp({ lookMs: LOOKS.answerWaitMs * 3 });
    store.drawn = 2;

    const mark = outcomeOf(a.marks.fresh());
    await clock.pass(LOOKS.answerWaitMs * 3 + 1);

    expect(mark.now()).toMatchObject({ upToId: 2 });
    expect(a.looked).toBe(1);
  });

  it('looks itself while Redis is down, says so once, and shares again once Redis answers after retryMs', async () => {
    const { clock, store, redis, a, b } = setUp({ lookMs: 5 });
    redis.down = true;

    for (let i = 0; i < 3; i++) await Promise.all([a.marks.fresh(), b.marks.fresh(), clock.pass(10)]);
    const whileDown = [a.looked, b.looked];
    const degraded = a.looks.degradation();
    redis.down = false;
    await clock.pass(LOOKS.retryMs);
    store.drawn = 9;
    const [fromA, fromB] = await Promise.all([a.marks.fresh(), b.marks.fresh(), clock.pass(20)]);

    expect(whileDown).toEqual([3, 3]);
    expect(degraded).toMatch(/Redis does not answer/);
    expect([fromA, fromB]).toEqual([
      expect.objectContaining({ upToId: 9 }) as SettledMark,
      expect.objectContaining({ upToId: 9 }) as SettledMark,
    ]);
    // A took the lease and looked for B too.
    expect([a.looked, b.looked]).toEqual([3 + 2, 3]);
    expect(a.looks.degradation()).toBeNull();
    expect(a.log).toEqual([
      expect.stringMatching(/Redis failed.*each instance looks for itself/),
      expect.stringMatching(/Redis answers again/),
    ]);
  });

  it('costs a look the command timeout once per retryMs while Redis hangs, no more', async () => {
    const { clock, redis, a } = setUp();
    redis.paused = true;
    const took: number[] = [];

    for (let i = 0; i < 5; i++) {
      const started = clock.now();
      const mark = outcomeOf(a.marks.fresh());
      while (mark.now() === 'pending') await clock.pass(1);
      took.push(clock.now() - started);
    }

    expect(took[0]).toBeGreaterThanOrEqual(250);
    expect(took.slice(1).every((ms) => ms < 10)).toBe(true);
  });

  it('looks itself while a looker gone holds the lease, and shares again once it lapses', async () => {
    const { clock, store, redis, a, b } = setUp();
    // An instance that took the lease and was killed before its look.
    await redis.boardFor().ask('gone/1', 'gone');

    const whileHeld = await Promise.all([a.marks.fresh(), b.marks.fresh(), clock.pass(LOOKS.answerWaitMs + 5)]);
    const lookedWhileHeld = [a.looked, b.looked];
    await clock.pass(redis.leaseMs);
    store.drawn = 6;
    const afterwards = await Promise.all([a.marks.fresh(), b.marks.fresh(), clock.pass(20)]);

    expect(whileHeld.slice(0, 2)).toEqual([expect.anything(), expect.anything()]);
    expect(lookedWhileHeld).toEqual([1, 1]);
    expect(afterwards.slice(0, 2).map((mark) => mark?.upToId)).toEqual([6, 6]);
    // A took the lease and looked for B too.
    expect([a.looked, b.looked]).toEqual([1 + 2, 1]);
  });

  it('takes back at its next ask a lease it took by a command whose reply was lost, and shares at once', async () => {
    const { clock, store, redis, a, b } = setUp({ leaseMs: LOOKS.retryMs * 5 });
    redis.repliesLost = true;
    await Promise.all([a.marks.fresh(), clock.pass(REDIS_COMMAND_TIMEOUT_MS + 5)]);
    redis.repliesLost = false;
    await clock.pass(LOOKS.retryMs);
    store.drawn = 4;

    const started = clock.now();
    const fromA = outcomeOf(a.marks.fresh());
    const fromB = outcomeOf(b.marks.fresh());
    await clock.pass(10);

    expect([fromA.now(), fromB.now()]).toEqual([
      expect.objectContaining({ upToId: 4 }),
      expect.objectContaining({ upToId: 4 }),
    ]);
    expect(clock.now() - started).toBeLessThan(LOOKS.answerWaitMs);
    expect(b.looked).toBe(0);
  });

  it('never answers an ask put after Redis restarted with a look that began before', async () => {
    const { clock, store, redis, a, b, c } = setUp({ lookMs: 20 });
    store.drawn = 1;
    const fromA = outcomeOf(a.marks.fresh());
    await clock.pass(2);
    store.drawn = 2;
    const fromB = outcomeOf(b.marks.fresh());
    // A's first look ended at 20; its next, for B, reads the sequence at 20 and answers at 40.
    await clock.pass(25);
    redis.restart();
    store.drawn = 3;
    const fromC = outcomeOf(c.marks.fresh());
    await clock.pass(100);

    expect([fromA.now(), fromB.now(), fromC.now()]).toEqual([
      expect.objectContaining({ upToId: 1 }),
      expect.objectContaining({ upToId: 2 }),
      expect.objectContaining({ upToId: 3 }),
    ]);
    // C's look was its own: it took its ask off the new board.
    expect(c.looked).toBe(1);
  });
});
