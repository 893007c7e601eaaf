import { UnguardedStoreError, WritersStillInFlightError } from '../../../../src/application/pets/errors.js';
import { StoreUnavailableError } from '../../../../src/application/platform/store-unavailable-error.js';
import type { Reading } from '../../../../src/infrastructure/pets/high-water-marks.js';
import { SharedHighWaterMarks } from '../../../../src/infrastructure/pets/high-water-marks.js';
import { ScriptedPrimary } from '../../../support/scripted-primary.js';
import { TestClock } from '../../../support/test-clock.js';
import { outcomeOf } from '../../../support/outcome.js';

const OPTIONS = { waitLimitMs: 8000, minPollMs: 2, maxPollMs: 50 };

function setUp(readingMs = 1) {
  const clock = new TestClock();
  const primary = new ScriptedPrimary(clock, readingMs);
  const events = { read: 0, waited: [] as number[], refused: 0 };
  const marks = new SharedHighWaterMarks(primary.read, OPTIONS, clock, {
    read: () => events.read++,
    waited: (seconds) => events.waited.push(seconds),
    refused: () => events.refused++,
  });
  return { clock, primary, marks, events };
}

describe('SharedHighWaterMarks', () => {
  it('gives the last id drawn when no create is in flight, in one reading', async () => {
    const { clock, primary, marks } = setUp();
    primary.drawn = 7;

    const mark = outcomeOf(marks.fresh());
    await clock.pass(1);

    expect(mark.now()).toEqual({ upToId: 7, lsn: '0/1', timeline: 1 });
    expect(marks.last()).toEqual({ upToId: 7, lsn: '0/1', timeline: 1 });
    expect(primary.readings).toHaveLength(1);
  });

  it('waits for the creates in flight at its reading, then gives the WAL position read after they ended', async () => {
    const { clock, primary, marks, events } = setUp();
    primary.drawn = 7;
    primary.inFlight = ['3/10', '4/20'];

    const mark = outcomeOf(marks.fresh());
    await clock.pass(100);
    expect(mark.now()).toBe('pending');
    primary.inFlight = ['4/20'];
    await clock.pass(100);
    expect(mark.now()).toBe('pending');
    primary.inFlight = [];
    await clock.pass(60);

    const answer = mark.now();
    expect(answer).toEqual({ upToId: 7, lsn: `0/${primary.readings.length}`, timeline: 1 });
    expect(events.waited[0]).toBeGreaterThan(0.2);
  });

  it('never waits for a create that began after its reading, however many follow', async () => {
    const { clock, primary, marks } = setUp();
    primary.drawn = 7;
    primary.inFlight = ['3/10'];

    const mark = outcomeOf(marks.fresh());
    await clock.pass(10);
    // 3/10 ends; a later create (8) is in flight at every reading from now on.
    primary.inFlight = ['5/30'];
    primary.drawn = 8;
    await clock.pass(60);

    expect(mark.now()).toEqual({ upToId: 7, lsn: expect.any(String) as string, timeline: 1 });
  });

  it('gives callers that request while a reading runs one reading after, shared, never the reading in flight', async () => {
    const { clock, primary, marks } = setUp(5);
    primary.drawn = 1;
    const first = outcomeOf(marks.fresh());
    await clock.pass(1);
    // Acknowledged after the first reading read the sequence.
    primary.drawn = 2;
    const second = outcomeOf(marks.fresh());
    const third = outcomeOf(marks.fresh());
    await clock.pass(20);

    expect(first.now()).toMatchObject({ upToId: 1 });
    expect(second.now()).toMatchObject({ upToId: 2 });
    expect(third.now()).toEqual(second.now());
    expect(primary.readings).toHaveLength(2);
  });

  it('lets a caller queued behind a waiting mark wait only for the creates in flight at its own reading', async () => {
    const { clock, primary, marks } = setUp();
    primary.drawn = 5;
    primary.inFlight = ['3/10'];
    const stalled = outcomeOf(marks.fresh());
    await clock.pass(100);
    primary.drawn = 6;
    primary.inFlight = ['3/10'];

    const queued = outcomeOf(marks.fresh());
    await clock.pass(1000);
    expect(queued.now()).toBe('pending');
    primary.inFlight = [];
    const endedAt = clock.now();
    await clock.pass(60);

    // Both answered within one poll of the stalled create's end, with the newest mark.
    expect([stalled.now(), queued.now()]).toEqual([
      { upToId: 6, lsn: expect.any(String) as string, timeline: 1 },
      { upToId: 6, lsn: expect.any(String) as string, timeline: 1 },
    ]);
    expect(primary.readings.at(-1)! - endedAt).toBeLessThanOrEqual(OPTIONS.maxPollMs);
  });

  it('reads at most every maxPollMs while marks wait, and not at all while none does', async () => {
    const { clock, primary, marks } = setUp();
    primary.inFlight = ['3/10'];
    void marks.fresh().catch(() => undefined);
    await clock.pass(2000);
    const gaps = primary.readings.slice(1).map((at, i) => at - primary.readings[i]!);

    expect(Math.max(...gaps)).toBeLessThanOrEqual(OPTIONS.maxPollMs + 1);
    expect(primary.readings.length).toBeLessThan(2000 / OPTIONS.maxPollMs + 10);

    primary.inFlight = [];
    await clock.pass(100);
    const read = primary.readings.length;
    await clock.pass(10_000);
    expect(primary.readings).toHaveLength(read);
  });

  it('answers a caller as soon as it requests, even while marks wait and the next reading is a poll away', async () => {
    const { clock, primary, marks } = setUp();
    primary.inFlight = ['3/10'];
    void marks.fresh().catch(() => undefined);
    await clock.pass(500);
    primary.inFlight = [];
    const askedAt = clock.now();

    const mark = outcomeOf(marks.fresh());
    await clock.pass(1);

    expect(mark.now()).not.toBe('pending');
    expect(primary.readings.at(-1)).toBe(askedAt);
  });

  it("gives up on a create that outlasts the database's limits with WritersStillInFlightError, queued callers included", async () => {
    const { clock, primary, marks, events } = setUp();
    primary.drawn = 5;
    primary.inFlight = ['3/10'];
    const first = outcomeOf(marks.fresh());
    await clock.pass(4000);
    const queued = outcomeOf(marks.fresh());
    await clock.pass(4000 + OPTIONS.maxPollMs + 2);

    expect(first.now()).toBeInstanceOf(WritersStillInFlightError);
    // Asked 4 s later: its own reading is 4 s younger.
    expect(queued.now()).toBe('pending');
    await clock.pass(4000);
    expect(queued.now()).toBeInstanceOf(WritersStillInFlightError);
    expect(events.refused).toBe(2);
  });

  it('refuses every caller, waiting or requesting, when the primary does not answer, and keeps the last mark', async () => {
    const { clock, primary, marks, events } = setUp();
    primary.drawn = 3;
    void marks.fresh();
    await clock.pass(1);
    primary.drawn = 4;
    primary.inFlight = ['3/10'];
    const waiting = outcomeOf(marks.fresh());
    await clock.pass(10);

    primary.failure = new StoreUnavailableError();
    const requesting = outcomeOf(marks.fresh());
    await clock.pass(10);

    expect(waiting.now()).toBeInstanceOf(StoreUnavailableError);
    expect(requesting.now()).toBeInstanceOf(StoreUnavailableError);
    expect(marks.last()).toMatchObject({ upToId: 3 });
    expect(events.refused).toBe(2);
  });
});

describe('SharedHighWaterMarks across a failover or a restore (a new timeline)', () => {
  it('takes the mark of a new timeline as the last, even below the one before', async () => {
    const { clock, primary, marks } = setUp();
    primary.drawn = 9;
    void marks.fresh();
    await clock.pass(1);

    primary.timeline = 2;
    primary.drawn = 4;
    const mark = outcomeOf(marks.fresh());
    await clock.pass(1);

    expect(mark.now()).toEqual({ upToId: 4, lsn: '0/2', timeline: 2 });
    expect(marks.last()).toEqual({ upToId: 4, lsn: '0/2', timeline: 2 });
  });

  it('answers a mark that waited for writers of the old primary from the new one, waiting for its writers instead', async () => {
    const { clock, primary, marks } = setUp();
    primary.drawn = 9;
    primary.inFlight = ['3/10'];
    const mark = outcomeOf(marks.fresh());
    await clock.pass(1);

    // The new primary knows nothing of 3/10, and has a writer of its own in flight.
    primary.timeline = 2;
    primary.drawn = 6;
    primary.inFlight = ['5/1'];
    await clock.pass(200);
    expect(mark.now()).toBe('pending');
    primary.inFlight = [];
    await clock.pass(60);

    expect(mark.now()).toEqual({ upToId: 6, lsn: expect.any(String) as string, timeline: 2 });
  });
});

describe('SharedHighWaterMarks when the store cannot vouch for its ids', () => {
  it('refuses every caller and forgets the last mark, so that no page is served under it', async () => {
    const { clock, primary, marks, events } = setUp();
    primary.drawn = 3;
    void marks.fresh();
    await clock.pass(1);
    primary.inFlight = ['3/10'];
    const waiting = outcomeOf(marks.fresh());
    await clock.pass(1);

    primary.failure = new UnguardedStoreError('the pets trigger pets_refuse_id is disabled');
    const asking = outcomeOf(marks.fresh());
    await clock.pass(60);

    expect(waiting.now()).toBeInstanceOf(UnguardedStoreError);
    expect(asking.now()).toBeInstanceOf(UnguardedStoreError);
    expect(marks.last()).toBeNull();
    expect(events.refused).toBe(2);
  });
});

describe('SharedHighWaterMarks at start', () => {
  it('reads its first mark when Nest says the app is up, and says why when it cannot', async () => {
    const clock = new TestClock();
    const primary = new ScriptedPrimary(clock);
    const lines: string[] = [];
    const marks = new SharedHighWaterMarks(primary.read, OPTIONS, clock, undefined, (line) => lines.push(line));
    primary.drawn = 2;

    marks.onApplicationBootstrap();
    await clock.pass(1);
    primary.failure = new StoreUnavailableError();
    const failing = new SharedHighWaterMarks(primary.read, OPTIONS, clock, undefined, (line) => lines.push(line));
    failing.onApplicationBootstrap();
    await clock.pass(1);

    expect(marks.last()).toEqual({ upToId: 2, lsn: '0/1', timeline: 1 });
    expect(failing.last()).toBeNull();
    expect(lines).toEqual([expect.stringContaining('No high-water mark at start')]);
  });
});

describe('SharedHighWaterMarks hearing the readings another instance published', () => {
  /** Marks whose readings are instance a's, numbered as SharedReadings numbers them; no poll within the test. */
  function setUpHearing({ tagged = true } = {}) {
    const clock = new TestClock();
    const primary = new ScriptedPrimary(clock);
    let seq = 0;
    const reading = async (): Promise<Reading> => {
      const reading = await primary.read();
      return tagged ? { ...reading, by: { reader: 'a', seq: ++seq } } : reading;
    };
    const marks = new SharedHighWaterMarks(reading, { ...OPTIONS, minPollMs: 60_000, maxPollMs: 60_000 }, clock);
    return { clock, primary, marks };
  }
  const heard = (reader: string, seq: number, writers: string[]): Reading => ({
    upToId: 9,
    writers,
    lsn: '0/99',
    timeline: 1,
    by: { reader: reader, seq },
  });

  it('learns that its writers ended from a later reading of the instance that made its own', async () => {
    const { clock, primary, marks } = setUpHearing();
    primary.drawn = 5;
    primary.inFlight = ['3/10'];
    const mark = outcomeOf(marks.fresh());
    await clock.pass(1);

    marks.heard(heard('a', 2, ['4/20']));
    await clock.pass(0);

    expect(mark.now()).toEqual({ upToId: 5, lsn: '0/99', timeline: 1 });
  });

  it('learns nothing from a reading of another instance, nor from an earlier one, nor from a reading of its own', async () => {
    const { clock, primary, marks } = setUpHearing();
    primary.inFlight = ['3/10'];
    const mark = outcomeOf(marks.fresh());
    await clock.pass(1);
    const untagged = setUpHearing({ tagged: false });
    untagged.primary.inFlight = ['3/10'];
    const ownLookMark = outcomeOf(untagged.marks.fresh());
    await untagged.clock.pass(1);

    marks.heard(heard('b', 7, []));
    marks.heard(heard('a', 1, []));
    marks.heard({ upToId: 9, writers: [], lsn: '0/99', timeline: 1 });
    untagged.marks.heard(heard('a', 2, []));
    await Promise.all([clock.pass(0), untagged.clock.pass(0)]);

    expect([mark.now(), ownLookMark.now()]).toEqual(['pending', 'pending']);
    marks.heard(heard('a', 2, []));
    await clock.pass(0);
    expect(mark.now()).toEqual({ upToId: 9, lsn: '0/99', timeline: 1 });
  });

  it('keeps the newest mark as the last when a reading heard later settles an older one', async () => {
    const { clock, primary, marks } = setUpHearing();
    primary.drawn = 5;
    primary.inFlight = ['3/10'];
    const mark = outcomeOf(marks.fresh());
    await clock.pass(1);

    // Instance b found no writer at 9; then a's next reading finds 3/10 ended, another writer in flight.
    marks.heard(heard('b', 1, []));
    marks.heard(heard('a', 2, ['4/20']));
    await clock.pass(0);

    expect(mark.now()).toEqual({ upToId: 5, lsn: '0/99', timeline: 1 });
    expect(marks.last()).toEqual({ upToId: 9, lsn: '0/99', timeline: 1 });
  });
});

describe('SharedHighWaterMarks reporting to the metrics', () => {
  it("reports one read per reading that answered callers, and each caller's wait in seconds", async () => {
    const { clock, primary, marks, events } = setUp();
    primary.drawn = 3;
    primary.inFlight = ['3/10'];
    const waited = marks.fresh();
    await clock.pass(100);
    primary.inFlight = [];
    await clock.pass(60);
    await waited;
    const readsAfterTheWait = events.read;

    // Two callers: the second asks while the first's reading runs, so it has a reading of its own.
    const both = [outcomeOf(marks.fresh()), outcomeOf(marks.fresh())];
    await clock.pass(5);

    expect(both.map((mark) => mark.now())).toEqual([
      expect.objectContaining({ upToId: 3 }),
      expect.objectContaining({ upToId: 3 }),
    ]);
    expect(readsAfterTheWait).toBe(1);
    expect(events.read).toBe(3);
    expect(events.waited[0]).toBeGreaterThanOrEqual(0.1);
    expect(events.waited[0]).toBeLessThan(0.2);
  });
});
