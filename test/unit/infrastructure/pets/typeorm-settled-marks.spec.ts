import { SettleTimeoutError } from '../../../../src/application/pets/errors.js';
import { StoreUnavailableError } from '../../../../src/application/platform/store-unavailable-error.js';
import type { MarkSnapshot } from '../../../../src/infrastructure/pets/mark-snapshot.js';
import { SharedSettledMarks } from '../../../../src/infrastructure/pets/typeorm-settled-marks.js';
import { ScriptedStore } from '../../../support/scripted-store.js';
import { TestClock } from '../../../support/test-clock.js';
import { outcomeOf } from '../../../support/outcome.js';

const OPTIONS = { waitLimitMs: 8000, minPollMs: 2, maxPollMs: 50 };

function setUp(lookMs = 1) {
  const clock = new TestClock();
  const store = new ScriptedStore(clock, lookMs);
  const events = { read: 0, waited: [] as number[], refused: 0 };
  const marks = new SharedSettledMarks(store.look, OPTIONS, clock, {
    read: () => events.read++,
    waited: (seconds) => events.waited.push(seconds),
    refused: () => events.refused++,
  });
  return { clock, store, marks, events };
}

describe('SharedSettledMarks', () => {
  it('gives the last id drawn when no create is in flight, in one look', async () => {
    const { clock, store, marks } = setUp();
    store.drawn = 7;

    const mark = outcomeOf(marks.fresh());
    await clock.pass(1);

    expect(mark.now()).toEqual({ upToId: 7, position: '0/1' });
    expect(marks.last()).toEqual({ upToId: 7, position: '0/1' });
    expect(store.looks).toHaveLength(1);
  });

  it('waits for the creates in flight when it looked, then gives a position read after they ended', async () => {
    const { clock, store, marks, events } = setUp();
    store.drawn = 7;
    store.inFlight = ['3/10', '4/20'];

    const mark = outcomeOf(marks.fresh());
    await clock.pass(100);
    expect(mark.now()).toBe('pending');
    store.inFlight = ['4/20'];
    await clock.pass(100);
    expect(mark.now()).toBe('pending');
    store.inFlight = [];
    await clock.pass(60);

    const answer = mark.now();
    expect(answer).toEqual({ upToId: 7, position: `0/${store.looks.length}` });
    expect(events.waited[0]).toBeGreaterThan(0.2);
  });

  it('never waits for a create that began after its look, however many follow', async () => {
    const { clock, store, marks } = setUp();
    store.drawn = 7;
    store.inFlight = ['3/10'];

    const mark = outcomeOf(marks.fresh());
    await clock.pass(10);
    // 3/10 ends; a later create (8) is in flight at every look from now on.
    store.inFlight = ['5/30'];
    store.drawn = 8;
    await clock.pass(60);

    expect(mark.now()).toEqual({ upToId: 7, position: expect.any(String) as string });
  });

  it('gives callers that ask while a look runs one look after, shared, never the look in flight', async () => {
    const { clock, store, marks } = setUp(5);
    store.drawn = 1;
    const first = outcomeOf(marks.fresh());
    await clock.pass(1);
    // Acknowledged after the first look read the sequence.
    store.drawn = 2;
    const second = outcomeOf(marks.fresh());
    const third = outcomeOf(marks.fresh());
    await clock.pass(20);

    expect(first.now()).toMatchObject({ upToId: 1 });
    expect(second.now()).toMatchObject({ upToId: 2 });
    expect(third.now()).toEqual(second.now());
    expect(store.looks).toHaveLength(2);
  });

  it('lets a caller queued behind a waiting mark wait only for the creates in flight at its own look', async () => {
    const { clock, store, marks } = setUp();
    store.drawn = 5;
    store.inFlight = ['3/10'];
    const stalled = outcomeOf(marks.fresh());
    await clock.pass(100);
    store.drawn = 6;
    store.inFlight = ['3/10'];

    const queued = outcomeOf(marks.fresh());
    await clock.pass(1000);
    expect(queued.now()).toBe('pending');
    store.inFlight = [];
    const endedAt = clock.now();
    await clock.pass(60);

    // Both answered within one poll of the stalled create's end, with the newest mark.
    expect([stalled.now(), queued.now()]).toEqual([
      { upToId: 6, position: expect.any(String) as string },
      { upToId: 6, position: expect.any(String) as string },
    ]);
    expect(store.looks.at(-1)! - endedAt).toBeLessThanOrEqual(OPTIONS.maxPollMs);
  });

  it('looks at most every maxPollMs while marks wait, and not at all while none does', async () => {
    const { clock, store, marks } = setUp();
    store.inFlight = ['3/10'];
    void marks.fresh().catch(() => undefined);
    await clock.pass(2000);
    const gaps = store.looks.slice(1).map((at, i) => at - store.looks[i]!);

    expect(Math.max(...gaps)).toBeLessThanOrEqual(OPTIONS.maxPollMs + 1);
    expect(store.looks.length).toBeLessThan(2000 / OPTIONS.maxPollMs + 10);

    store.inFlight = [];
    await clock.pass(100);
    const looked = store.looks.length;
    await clock.pass(10_000);
    expect(store.looks).toHaveLength(looked);
  });

  it('answers a caller as soon as it asks, even while marks wait and the next look is a poll away', async () => {
    const { clock, store, marks } = setUp();
    store.inFlight = ['3/10'];
    void marks.fresh().catch(() => undefined);
    await clock.pass(500);
    store.inFlight = [];
    const askedAt = clock.now();

    const mark = outcomeOf(marks.fresh());
    await clock.pass(1);

    expect(mark.now()).not.toBe('pending');
    expect(store.looks.at(-1)).toBe(askedAt);
  });

  it('gives up on a create that outlasts the store limits with SettleTimeoutError, queued callers included', async () => {
    const { clock, store, marks, events } = setUp();
    store.drawn = 5;
    store.inFlight = ['3/10'];
    const first = outcomeOf(marks.fresh());
    await clock.pass(4000);
    const queued = outcomeOf(marks.fresh());
    await clock.pass(4000 + OPTIONS.maxPollMs + 2);

    expect(first.now()).toBeInstanceOf(SettleTimeoutError);
    // Asked 4 s later: its own look is 4 s younger.
    expect(queued.now()).toBe('pending');
    await clock.pass(4000);
    expect(queued.now()).toBeInstanceOf(SettleTimeoutError);
    expect(events.refused).toBe(2);
  });

  it('refuses every caller, waiting or asking, when the store does not answer, and keeps the last mark', async () => {
    const { clock, store, marks, events } = setUp();
    store.drawn = 3;
    void marks.fresh();
    await clock.pass(1);
    store.drawn = 4;
    store.inFlight = ['3/10'];
    const waiting = outcomeOf(marks.fresh());
    await clock.pass(10);

    store.failure = new StoreUnavailableError();
    const asking = outcomeOf(marks.fresh());
    await clock.pass(10);

    expect(waiting.now()).toBeInstanceOf(StoreUnavailableError);
    expect(asking.now()).toBeInstanceOf(StoreUnavailableError);
    expect(marks.last()).toMatchObject({ upToId: 3 });
    expect(events.refused).toBe(2);
  });
});

describe('SharedSettledMarks hearing the looks another instance published', () => {
  /** Marks whose looks are instance a's, numbered as SharedLooks numbers them; no poll within the test. */
  function setUpHearing({ tagged = true } = {}) {
    const clock = new TestClock();
    const store = new ScriptedStore(clock);
    let seq = 0;
    const look = async (): Promise<MarkSnapshot> => {
      const snapshot = await store.look();
      return tagged ? { ...snapshot, look: { looker: 'a', seq: ++seq } } : snapshot;
    };
    const marks = new SharedSettledMarks(look, { ...OPTIONS, minPollMs: 60_000, maxPollMs: 60_000 }, clock);
    return { clock, store, marks };
  }
  const heard = (looker: string, seq: number, holders: string[]): MarkSnapshot => ({
    upToId: 9,
    holders,
    position: '0/99',
    look: { looker, seq },
  });

  it('learns that its holders ended from a later look of the instance that made its own', async () => {
    const { clock, store, marks } = setUpHearing();
    store.drawn = 5;
    store.inFlight = ['3/10'];
    const mark = outcomeOf(marks.fresh());
    await clock.pass(1);

    marks.overheard(heard('a', 2, ['4/20']));
    await clock.pass(0);

    expect(mark.now()).toEqual({ upToId: 5, position: '0/99' });
  });

  it('learns nothing from a look of another instance, nor from an earlier one, nor from a look of its own', async () => {
    const { clock, store, marks } = setUpHearing();
    store.inFlight = ['3/10'];
    const mark = outcomeOf(marks.fresh());
    await clock.pass(1);
    const untagged = setUpHearing({ tagged: false });
    untagged.store.inFlight = ['3/10'];
    const ownLookMark = outcomeOf(untagged.marks.fresh());
    await untagged.clock.pass(1);

    marks.overheard(heard('b', 7, []));
    marks.overheard(heard('a', 1, []));
    marks.overheard({ upToId: 9, holders: [], position: '0/99' });
    untagged.marks.overheard(heard('a', 2, []));
    await Promise.all([clock.pass(0), untagged.clock.pass(0)]);

    expect([mark.now(), ownLookMark.now()]).toEqual(['pending', 'pending']);
    marks.overheard(heard('a', 2, []));
    await clock.pass(0);
    expect(mark.now()).toEqual({ upToId: 9, position: '0/99' });
  });
});
