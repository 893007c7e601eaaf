import { StoreUnavailableError } from '../../../../src/application/platform/store-unavailable-error.js';
import type { HighWaterMark } from '../../../../src/domain/pets/pet-repository.js';
import { type SharedReadingOptions, SharedReadings } from '../../../../src/infrastructure/pets/shared-readings.js';
import type { Reading } from '../../../../src/infrastructure/pets/high-water-marks.js';
import { SharedHighWaterMarks } from '../../../../src/infrastructure/pets/high-water-marks.js';
import { REDIS_COMMAND_TIMEOUT_MS } from '../../../../src/infrastructure/platform/rate-limits/flexible-rate-limits.js';
import { InMemoryReadingRedis } from '../../../support/in-memory-reading-queue.js';
import { ScriptedPrimary } from '../../../support/scripted-primary.js';
import { TestClock } from '../../../support/test-clock.js';
import { outcomeOf } from '../../../support/outcome.js';

const MARKS = { waitLimitMs: 8000, minPollMs: 2, maxPollMs: 50 };
const SHARING: SharedReadingOptions = { answerWaitMs: 250, retryMs: 1000 };

/** One instance: its marks, its readings on the shared primary, and what it logged. */
type Instance = {
  marks: SharedHighWaterMarks;
  readings: SharedReadings;
  /** The readings this instance ran on the primary itself. */
  read: number;
  /** Set: this instance's own readings fail (its connection to the primary is gone). */
  failure: Error | null;
  log: string[];
};

function setUp({ instances = 3, readingMs = 1, leaseMs = 1000, marks = MARKS } = {}) {
  const clock = new TestClock();
  const primary = new ScriptedPrimary(clock, readingMs);
  const redis = new InMemoryReadingRedis(clock, leaseMs);
  const cluster: Instance[] = [];
  for (let i = 0; i < instances; i++) {
    const log: string[] = [];
    const readHere = (): Promise<Reading> => {
      instance.read++;
      return instance.failure === null ? primary.read() : Promise.reject(instance.failure);
    };
    const readings = new SharedReadings(redis.queueFor(), readHere, SHARING, clock, (line) => log.push(line));
    const instance: Instance = {
      marks: new SharedHighWaterMarks(readings.read, marks, clock),
      readings,
      read: 0,
      failure: null,
      log,
    };
    // As SharedHighWaterMarks wires them: the readings published by any instance reach the marks waiting here.
    readings.onReading((reading) => instance.marks.heard(reading));
    cluster.push(instance);
  }
  return { clock, primary, redis, cluster, a: cluster[0]!, b: cluster[1]!, c: cluster[2]! };
}

describe('SharedReadings: the high-water marks of several instances through one reading queue', () => {
  it('answers the requests of every instance made while one reads with its next reading: one reading, not one each', async () => {
    const { clock, primary, a, b, c } = setUp({ readingMs: 5 });
    primary.drawn = 1;
    const first = outcomeOf(a.marks.fresh());
    await clock.pass(1);
    // Acknowledged after A's reading read the sequence: the requests after it need a reading that began later.
    primary.drawn = 2;
    const fromB = outcomeOf(b.marks.fresh());
    const fromC = outcomeOf(c.marks.fresh());
    await clock.pass(20);

    expect(first.now()).toMatchObject({ upToId: 1 });
    expect(fromB.now()).toMatchObject({ upToId: 2 });
    expect(fromC.now()).toEqual(fromB.now());
    expect(primary.readings).toHaveLength(2);
    expect([a.read, b.read, c.read]).toEqual([2, 0, 0]);
  });

  it('never answers a request with a reading that began before it, however the requests interleave', async () => {
    const { clock, primary, cluster } = setUp({ readingMs: 3 });
    const answers: { requested: number; answer: Promise<HighWaterMark> }[] = [];

    for (let step = 0; step < 60; step++) {
      // A create acknowledged every millisecond; an instance requests at each step, in turn.
      primary.drawn++;
      answers.push({ requested: primary.drawn, answer: cluster[step % 3]!.marks.fresh() });
      await clock.pass(1);
    }
    await clock.pass(50);

    for (const { requested, answer } of answers) expect((await answer).upToId).toBeGreaterThanOrEqual(requested);
    // One reading at a time for all three, back to back: each instance alone would reading as often.
    expect(primary.readings.length).toBeLessThan(60 / 3 + 10);
  });

  it('answers a mark waiting on one instance with a later reading of the instance it waits from, made for another caller', async () => {
    const { clock, primary, a, b } = setUp({ readingMs: 5, marks: { ...MARKS, minPollMs: 10_000, maxPollMs: 10_000 } });
    primary.drawn = 5;
    primary.inFlight = ['3/10'];
    void a.marks.fresh();
    await clock.pass(1);
    // B's request waits for A's next reading, which still lists the create in flight.
    const fromB = outcomeOf(b.marks.fresh());
    await clock.pass(20);
    expect(fromB.now()).toBe('pending');

    primary.inFlight = [];
    void a.marks.fresh();
    await clock.pass(10);

    expect(fromB.now()).toMatchObject({ upToId: 5 });
    expect(b.read).toBe(0);
  });

  it('shares the polls of marks that wait for a create in flight', async () => {
    const shared = setUp();
    const alone = setUp({ instances: 1 });
    for (const { primary } of [shared, alone]) primary.inFlight = ['3/10'];

    for (const instance of shared.cluster) void instance.marks.fresh().catch(() => undefined);
    void alone.a.marks.fresh().catch(() => undefined);
    await Promise.all([shared.clock.pass(2000), alone.clock.pass(2000)]);

    // Three instances waiting poll the primary less often than three would alone: the first poll of a
    // round is read for by the instance that makes it, the others' by its next reading.
    expect(shared.primary.readings.length).toBeLessThanOrEqual(alone.primary.readings.length * 2 + 2);
  });

  it('reads itself when an answer is lost, and an answer that comes late changes nothing', async () => {
    const { clock, primary, redis, a, b } = setUp({ readingMs: 5 });
    void a.marks.fresh();
    await clock.pass(1);
    primary.drawn = 4;
    redis.held = [];

    const fromB = outcomeOf(b.marks.fresh());
    await clock.pass(SHARING.answerWaitMs - 10);
    expect(fromB.now()).toBe('pending');
    await clock.pass(20);
    // Its own reading, the answer lost.
    expect(fromB.now()).toMatchObject({ upToId: 4 });
    expect(b.read).toBe(1);
    primary.drawn = 5;
    const again = outcomeOf(b.marks.fresh());
    // The answer to B's first request comes now, while B requests again: it answers nothing requested after it.
    redis.deliverHeld();
    await clock.pass(20);

    expect(again.now()).toMatchObject({ upToId: 5 });
  });

  it('answers the other instances at once when the reader fails, by their own readings, and its own callers with the error', async () => {
    const { clock, primary, a, b } = setUp({ readingMs: 5 });
    primary.drawn = 3;
    void a.marks.fresh();
    await clock.pass(1);
    const fromB = outcomeOf(b.marks.fresh());
    a.failure = new StoreUnavailableError();
    const fromA = outcomeOf(a.marks.fresh());
    await clock.pass(20);

    expect(fromA.now()).toBeInstanceOf(StoreUnavailableError);
    expect(fromB.now()).toMatchObject({ upToId: 3 });
    expect(b.read).toBe(1);
  });

  it('waits for a reading of its own however long it takes, and never reads twice for one request', async () => {
    const { clock, primary, a } = setUp({ readingMs: SHARING.answerWaitMs * 3 });
    primary.drawn = 2;

    const mark = outcomeOf(a.marks.fresh());
    await clock.pass(SHARING.answerWaitMs * 3 + 1);

    expect(mark.now()).toMatchObject({ upToId: 2 });
    expect(a.read).toBe(1);
  });

  it('reads itself while Redis is down, says so once, and shares again once Redis answers after retryMs', async () => {
    const { clock, primary, redis, a, b } = setUp({ readingMs: 5 });
    redis.down = true;

    for (let i = 0; i < 3; i++) await Promise.all([a.marks.fresh(), b.marks.fresh(), clock.pass(10)]);
    const whileDown = [a.read, b.read];
    const degraded = a.readings.degradation();
    redis.down = false;
    await clock.pass(SHARING.retryMs);
    primary.drawn = 9;
    const [fromA, fromB] = await Promise.all([a.marks.fresh(), b.marks.fresh(), clock.pass(20)]);

    expect(whileDown).toEqual([3, 3]);
    expect(degraded).toMatch(/Redis does not answer/);
    expect([fromA, fromB]).toEqual([
      expect.objectContaining({ upToId: 9 }) as HighWaterMark,
      expect.objectContaining({ upToId: 9 }) as HighWaterMark,
    ]);
    // A took the lease and read for B too.
    expect([a.read, b.read]).toEqual([3 + 2, 3]);
    expect(a.readings.degradation()).toBeNull();
    expect(a.log).toEqual([
      expect.stringMatching(/Redis failed \(its subscription is down\); each instance reads for itself/),
      expect.stringMatching(/Redis answers again/),
    ]);
  });

  it('costs a reading the command timeout once per retryMs while Redis hangs, no more', async () => {
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

  it('reads itself while a reader gone holds the lease, and shares again once it lapses', async () => {
    const { clock, primary, redis, a, b } = setUp();
    // An instance that took the lease and was killed before its reading.
    await redis.queueFor().enqueue('gone/1', 'gone');

    const whileHeld = await Promise.all([a.marks.fresh(), b.marks.fresh(), clock.pass(SHARING.answerWaitMs + 5)]);
    const readWhileHeld = [a.read, b.read];
    await clock.pass(redis.leaseMs);
    primary.drawn = 6;
    const afterwards = await Promise.all([a.marks.fresh(), b.marks.fresh(), clock.pass(20)]);

    expect(whileHeld.slice(0, 2)).toEqual([expect.anything(), expect.anything()]);
    expect(readWhileHeld).toEqual([1, 1]);
    expect(afterwards.slice(0, 2).map((mark) => mark?.upToId)).toEqual([6, 6]);
    // A took the lease and read for B too.
    expect([a.read, b.read]).toEqual([1 + 2, 1]);
  });

  it('takes back at its next request a lease it took by a command whose reply was lost, and shares at once', async () => {
    const { clock, primary, redis, a, b } = setUp({ leaseMs: SHARING.retryMs * 5 });
    redis.repliesLost = true;
    await Promise.all([a.marks.fresh(), clock.pass(REDIS_COMMAND_TIMEOUT_MS + 5)]);
    redis.repliesLost = false;
    await clock.pass(SHARING.retryMs);
    primary.drawn = 4;

    const started = clock.now();
    const fromA = outcomeOf(a.marks.fresh());
    const fromB = outcomeOf(b.marks.fresh());
    await clock.pass(10);

    expect([fromA.now(), fromB.now()]).toEqual([
      expect.objectContaining({ upToId: 4 }),
      expect.objectContaining({ upToId: 4 }),
    ]);
    expect(clock.now() - started).toBeLessThan(SHARING.answerWaitMs);
    expect(b.read).toBe(0);
  });

  it('never answers a request queued after Redis restarted with a reading that began before', async () => {
    const { clock, primary, redis, a, b, c } = setUp({ readingMs: 20 });
    primary.drawn = 1;
    const fromA = outcomeOf(a.marks.fresh());
    await clock.pass(2);
    primary.drawn = 2;
    const fromB = outcomeOf(b.marks.fresh());
    // A's first reading ended at 20; its next, for B, reads the sequence at 20 and answers at 40.
    await clock.pass(25);
    redis.restart();
    primary.drawn = 3;
    const fromC = outcomeOf(c.marks.fresh());
    await clock.pass(100);

    expect([fromA.now(), fromB.now(), fromC.now()]).toEqual([
      expect.objectContaining({ upToId: 1 }),
      expect.objectContaining({ upToId: 2 }),
      expect.objectContaining({ upToId: 3 }),
    ]);
    // C's reading was its own: it took its request off the new queue.
    expect(c.read).toBe(1);
  });
});
