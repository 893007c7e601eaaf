import { WritersStillInFlightError } from '../../application/pets/errors.js';
import { HighWaterMarkEvents, HighWaterMarks } from '../../application/pets/ports.js';
import { UnguardedStoreError } from '../../application/pets/errors.js';
import type { HighWaterMark } from '../../domain/pets/pet-repository.js';
import { type Clock, SYSTEM_CLOCK } from './clock.js';

// The pets' high-water marks: what a list waits for, when it is answered, when it gives up. Pure:
// the reading on the primary is given (its SQL: typeorm-high-water-mark-reading.ts), and so is the
// clock. docs/internals.md, "Exact paging", says why a page under such a mark is complete.

/**
 * One reading on the primary, in this order: the highest id drawn, then the transactions writing
 * pets at that moment (PostgreSQL's virtual transaction ids), then where the primary's WAL stood.
 * Every id up to `upToId` is settled once each of `writers` has ended. `by` places a reading one
 * instance made for the others (shared-readings.ts).
 */
export type Reading = { upToId: number; writers: string[]; lsn: string; timeline: number; by?: ReadingOrder };

/**
 * A reading's place among the readings of the instance that made it: one instance reads one
 * reading at a time, so a later one saw the writers after an earlier one did.
 */
export type ReadingOrder = { reader: string; seq: number };

/**
 * A high-water mark with where the primary's WAL stood once every pet up to it was committed: a
 * server of the same timeline that has replayed past `lsn` holds every one of them.
 */
export class WalHighWaterMark implements HighWaterMark {
  constructor(
    readonly upToId: number,
    readonly lsn: string,
    readonly timeline: number,
  ) {}
}

/** Reports nothing: for marks read where no metrics are kept. */
export const NO_MARK_EVENTS: HighWaterMarkEvents = {
  read: () => undefined,
  waited: () => undefined,
  refused: () => undefined,
};

export type HighWaterMarkOptions = {
  /** How long a mark may wait for its writers: the store's own limits on a writer, plus a margin. */
  waitLimitMs: number;
  /** The first pause between readings while marks wait for writers; it doubles up to `maxPollMs`. */
  minPollMs: number;
  maxPollMs: number;
};

type Caller = { askedAt: number; resolve(mark: WalHighWaterMark): void; reject(error: unknown): void };
/** Callers waiting for the writers a reading listed; `by` places that reading when another instance made it. */
type Waiting = {
  upToId: number;
  writers: string[];
  timeline: number;
  since: number;
  callers: Caller[];
  by?: ReadingOrder;
};

/**
 * The high-water marks of one instance, shared by its requests as Go's single-flight shares a
 * call, with one difference that read-your-writes needs: a caller who arrives while a reading runs
 * waits for the next reading, since the one running may have read the sequence before the caller's
 * own create was acknowledged. A reading that finds writers in flight leaves its callers waiting
 * for those writers only (as PostgreSQL's WaitForLockers waits for the lockers it found, never for
 * later ones); later readings, made for new callers or every few milliseconds, tell when they have
 * ended. Nothing here takes a lock a create could queue behind.
 */
export class SharedHighWaterMarks extends HighWaterMarks {
  private mark: WalHighWaterMark | null = null;
  private asking: Caller[] = [];
  private waiting: Waiting[] = [];
  private reading = false;
  private wake: () => void = () => undefined;

  constructor(
    private readonly read: () => Promise<Reading>,
    private readonly options: HighWaterMarkOptions,
    private readonly clock: Clock = SYSTEM_CLOCK,
    private readonly events: HighWaterMarkEvents = NO_MARK_EVENTS,
    private readonly log: (line: string) => void = () => undefined,
  ) {
    super();
  }

  /** Nest calls it once the app is up: a first mark, so that the instance is ready and its first lists need not wait. */
  onApplicationBootstrap(): void {
    this.fresh().catch((error: unknown) => this.log(`No high-water mark at start: ${String(error)}`));
  }

  last(): WalHighWaterMark | null {
    return this.mark;
  }

  fresh(): Promise<WalHighWaterMark> {
    return new Promise<WalHighWaterMark>((resolve, reject) => {
      this.asking.push({ askedAt: this.clock.now(), resolve, reject });
      this.wake();
      if (!this.reading) void this.readWhileAsked();
    });
  }

  private async readWhileAsked(): Promise<void> {
    this.reading = true;
    let pollMs = this.options.minPollMs;
    try {
      while (this.asking.length > 0 || this.waiting.length > 0) {
        if (this.asking.length === 0) {
          // Only marks waiting for writers: read again a little later, or as soon as a caller asks.
          await this.clock.sleep(pollMs, new Promise<void>((resolve) => (this.wake = resolve)));
          this.wake = () => undefined;
          pollMs = Math.min(pollMs * 2, this.options.maxPollMs);
        }
        const asking = this.asking.splice(0);
        let reading: Reading;
        try {
          reading = await this.read();
        } catch (error) {
          // No mark can be told settled, so no caller is left waiting. A store that cannot vouch
          // for its ids (a guard is off) vouches for no earlier mark either.
          if (error instanceof UnguardedStoreError) this.mark = null;
          for (const caller of [...asking, ...this.waiting.splice(0).flatMap((mark) => mark.callers)])
            this.refuse(caller, error);
          continue;
        }
        if (this.settle(reading, asking)) pollMs = this.options.minPollMs;
      }
    } finally {
      this.reading = false;
    }
  }

  /**
   * A reading another instance published for others (shared-readings.ts). It tells the marks
   * waiting here whether their writers ended only if it was made after their own reading: known
   * for the later readings of the instance that made theirs, which reads one reading at a time.
   */
  heard(reading: Reading): void {
    const order = reading.by;
    if (order === undefined) return;
    this.settle(reading, [], (mark) => mark.by?.reader === order.reader && mark.by.seq < order.seq);
  }

  /** Answers every caller the reading settles, among the waiting marks it may tell about; true when any was. */
  private settle(reading: Reading, asking: Caller[], madeAfter: (mark: Waiting) => boolean = () => true): boolean {
    const { upToId, writers, lsn, timeline, by } = reading;
    const now = this.clock.now();
    const settled: Waiting[] = [];
    const told = this.waiting.filter(madeAfter);
    this.waiting = this.waiting.filter((mark) => !madeAfter(mark));
    // Writers listed on another timeline (a failover, a restore since) are no writers of this
    // primary: those marks start again from this reading, as if their callers asked now.
    for (const mark of told.filter((mark) => mark.timeline !== timeline)) asking.push(...mark.callers);
    const sameTimeline = told.filter((mark) => mark.timeline === timeline);
    if (writers.length === 0) {
      // Nothing in flight: this mark is settled, and is at or above every mark still waiting.
      settled.push(...sameTimeline.map((mark) => ({ ...mark, upToId })));
      settled.push({ upToId, writers, timeline, since: now, callers: asking });
    } else {
      // A writer no longer listed has ended: it held the table lock until it did.
      const inFlight = new Set(writers);
      for (const mark of sameTimeline) {
        if (!mark.writers.some((writer) => inFlight.has(writer))) settled.push(mark);
        else if (now - mark.since < this.options.waitLimitMs) this.waiting.push(mark);
        else for (const caller of mark.callers) this.refuse(caller, new WritersStillInFlightError());
      }
      if (asking.length > 0) this.waiting.push({ upToId, writers, timeline, since: now, callers: asking, by });
    }
    for (const mark of settled) {
      // The WAL position read after every writer of this mark had ended is past all of their commits.
      const answer = new WalHighWaterMark(mark.upToId, lsn, timeline);
      if (this.mark === null || this.mark.timeline !== timeline || answer.upToId >= this.mark.upToId)
        this.mark = answer;
      if (mark.callers.length > 0) this.events.read();
      for (const caller of mark.callers) {
        this.events.waited((now - caller.askedAt) / 1000);
        caller.resolve(answer);
      }
    }
    return settled.length > 0;
  }

  private refuse(caller: Caller, error: unknown): void {
    this.events.refused();
    caller.reject(error);
  }
}
