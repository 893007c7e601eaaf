import type { DataSource } from 'typeorm';
import type { SettledMark } from '../../domain/pets/pet-repository.js';
import { SettleTimeoutError } from '../../application/pets/errors.js';
import { SettledMarkEvents, SettledMarks } from '../../application/pets/ports.js';
import { propertyOf } from '../platform/property-of.js';
import { fromBigint } from '../platform/database/bigint.js';
import { IDLE_IN_TRANSACTION_MS, STATEMENT_TIMEOUT_MS } from '../platform/database/database.js';
import { translateStoreErrors } from '../platform/database/store-errors.js';
import { ON_PETS_LOCK, prepared } from './typeorm-pet-repository.js';
import { type Clock, SYSTEM_CLOCK } from './clock.js';
import type { LookOrder, MarkSnapshot } from './mark-snapshot.js';
import { type LookBoard, SHARED_LOOK_OPTIONS, SharedLooks } from './shared-looks.js';

// The settled marks: SharedSettledMarks shares one look at a time among an instance's requests and
// waits for the creates each look found in flight (tested on its own with a fake look and clock);
// TypeOrmSettledMarks gives it the look, one statement on the primary, shared with the other
// instances when it has a look board (shared-looks.ts).

/**
 * A mark with the WAL position at which every pet up to it was committed: a replica that has
 * replayed past `position` holds every one of them (replica-pet-repository.ts reads it there).
 */
export class WalSettledMark implements SettledMark {
  constructor(
    readonly upToId: number,
    readonly position: string,
  ) {}
}

/** Reports nothing: for marks read where no metrics are kept. */
export const NO_MARK_EVENTS: SettledMarkEvents = {
  read: () => undefined,
  waited: () => undefined,
  refused: () => undefined,
};

export type SharedMarksOptions = {
  /** How long a mark may wait for its holders: the store's own limits on a writer, plus a margin. */
  waitLimitMs: number;
  /** The first pause between looks while marks wait for holders; it doubles up to `maxPollMs`. */
  minPollMs: number;
  maxPollMs: number;
};

type Caller = { askedAt: number; resolve(mark: WalSettledMark): void; reject(error: unknown): void };
/** Callers waiting for the holders a look listed; `look` places that look when another instance made it. */
type Waiting = { upToId: number; holders: string[]; since: number; callers: Caller[]; look?: LookOrder };

/**
 * Settled marks shared by the requests of an instance. One look at the store at a time: callers
 * that ask while one runs share the next, since the one running may have read the sequence before
 * their own create was acknowledged. A look that finds creates in flight leaves its callers waiting
 * for those creates only; later looks, made for new callers or every few milliseconds, tell when
 * they have ended. Nothing here takes a lock a create could queue behind.
 */
export class SharedSettledMarks extends SettledMarks {
  private mark: WalSettledMark | null = null;
  private asking: Caller[] = [];
  private waiting: Waiting[] = [];
  private looking = false;
  private wake: () => void = () => undefined;

  constructor(
    private readonly look: () => Promise<MarkSnapshot>,
    private readonly options: SharedMarksOptions,
    private readonly clock: Clock = SYSTEM_CLOCK,
    private readonly events: SettledMarkEvents = NO_MARK_EVENTS,
  ) {
    super();
  }

  last(): WalSettledMark | null {
    return this.mark;
  }

  fresh(): Promise<WalSettledMark> {
    return new Promise<WalSettledMark>((resolve, reject) => {
      this.asking.push({ askedAt: this.clock.now(), resolve, reject });
      this.wake();
      if (!this.looking) void this.lookWhileAsked();
    });
  }

  private async lookWhileAsked(): Promise<void> {
    this.looking = true;
    let pollMs = this.options.minPollMs;
    try {
      while (this.asking.length > 0 || this.waiting.length > 0) {
        if (this.asking.length === 0) {
          // Only marks waiting for holders: look again a little later, or as soon as a caller asks.
          await this.clock.sleep(pollMs, new Promise<void>((resolve) => (this.wake = resolve)));
          this.wake = () => undefined;
          pollMs = Math.min(pollMs * 2, this.options.maxPollMs);
        }
        const asking = this.asking.splice(0);
        let snapshot: MarkSnapshot;
        try {
          snapshot = await this.look();
        } catch (error) {
          // The store does not answer: no mark can be told settled, so no caller is left waiting.
          for (const caller of [...asking, ...this.waiting.splice(0).flatMap((mark) => mark.callers)])
            this.refuse(caller, error);
          continue;
        }
        if (this.settle(snapshot, asking)) pollMs = this.options.minPollMs;
      }
    } finally {
      this.looking = false;
    }
  }

  /**
   * A look another instance published for others (shared-looks.ts). It tells the marks waiting
   * here whether their holders ended only if it read after their own look: known for the later
   * looks of the instance that made theirs, which runs its looks one after another.
   */
  overheard(snapshot: MarkSnapshot): void {
    const order = snapshot.look;
    if (order === undefined) return;
    this.settle(snapshot, [], (mark) => mark.look?.looker === order.looker && mark.look.seq < order.seq);
  }

  /** Answers every caller the snapshot settles, among the waiting marks it may tell about; true when any was. */
  private settle(
    { upToId, holders, position, look }: MarkSnapshot,
    asking: Caller[],
    readAfter: (mark: Waiting) => boolean = () => true,
  ): boolean {
    const now = this.clock.now();
    const settled: Waiting[] = [];
    const told = this.waiting.filter(readAfter);
    this.waiting = this.waiting.filter((mark) => !readAfter(mark));
    if (holders.length === 0) {
      // Nothing in flight: this mark is settled, and is at or above every mark still waiting.
      settled.push(...told.map((mark) => ({ ...mark, upToId })));
      settled.push({ upToId, holders, since: now, callers: asking });
    } else {
      // A holder no longer listed has ended: its transaction held the lock until it did.
      const inFlight = new Set(holders);
      for (const mark of told) {
        if (!mark.holders.some((holder) => inFlight.has(holder))) settled.push(mark);
        else if (now - mark.since < this.options.waitLimitMs) this.waiting.push(mark);
        else for (const caller of mark.callers) this.refuse(caller, new SettleTimeoutError());
      }
      if (asking.length > 0) this.waiting.push({ upToId, holders, since: now, callers: asking, look });
    }
    for (const mark of settled) {
      // The position read after every holder of this mark had ended is past all of their commits.
      const answer = new WalSettledMark(mark.upToId, position);
      if (this.mark === null || answer.upToId >= this.mark.upToId) this.mark = answer;
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

/**
 * A writer holds the pets lock at most until PostgreSQL ends it: a statement, then its session
 * idle in the transaction; the margin is for the commit and the looks themselves.
 */
export const MARK_WAIT_LIMIT_MS = STATEMENT_TIMEOUT_MS + IDLE_IN_TRANSACTION_MS + 1000;
export const MARK_OPTIONS: SharedMarksOptions = { waitLimitMs: MARK_WAIT_LIMIT_MS, minPollMs: 2, maxPollMs: 50 };

/**
 * One statement, each step reading after the one before: the sequence's last value, then the
 * sessions holding the pets lock (ON_PETS_LOCK), then the WAL position. The correlated subquery
 * runs for the row `drawn` gave, so after it; the position is read for the row `holding` gave.
 * Why every id up to the value is settled once those holders have ended: docs/internals.md,
 * "Exact paging".
 */
const LOOK = prepared(
  'pets_settled_mark',
  `WITH drawn AS MATERIALIZED (
    SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence('pets', 'id')::regclass), 0) AS up_to_id),
  holding AS MATERIALIZED (
    SELECT up_to_id, ARRAY(SELECT virtualtransaction FROM pg_locks
      WHERE ${ON_PETS_LOCK} AND granted AND pid <> pg_backend_pid() AND drawn.up_to_id IS NOT NULL) AS holders
    FROM drawn)
  SELECT up_to_id::text, holders, pg_current_wal_lsn()::text AS position FROM holding`,
);

export type TypeOrmMarksOptions = {
  options?: SharedMarksOptions;
  events?: SettledMarkEvents;
  /** Where the instances share their looks (Redis); without one, this instance looks for itself. */
  board?: LookBoard | null;
  /** Where a change in the sharing is said: Redis failing, and answering again. */
  log?: (line: string) => void;
};

/**
 * Settled marks read on the primary, shared by the requests of this instance (SharedSettledMarks)
 * and, with a look board, by the instances (SharedLooks).
 */
export class TypeOrmSettledMarks extends SharedSettledMarks {
  private readonly between: SharedLooks | null;

  constructor(
    primary: DataSource,
    { options = MARK_OPTIONS, events = NO_MARK_EVENTS, board = null, log = () => undefined }: TypeOrmMarksOptions = {},
  ) {
    const ownLook = (): Promise<MarkSnapshot> => translateStoreErrors(() => look(primary));
    const between = board === null ? null : new SharedLooks(board, ownLook, SHARED_LOOK_OPTIONS, SYSTEM_CLOCK, log);
    super(between?.look ?? ownLook, options, SYSTEM_CLOCK, events);
    this.between = between;
    between?.onLook((snapshot) => this.overheard(snapshot));
  }

  /** Null while the looks are shared as configured, else what the instance does without. */
  degradation(): string | null {
    return this.between?.degradation() ?? null;
  }
}

async function look(primary: DataSource): Promise<MarkSnapshot> {
  const rows: unknown = await primary.query(LOOK);
  const row: unknown = Array.isArray(rows) ? rows[0] : undefined;
  const position = propertyOf(row, 'position');
  const holders = propertyOf(row, 'holders');
  if (typeof position !== 'string' || !Array.isArray(holders))
    throw new Error('the settled mark of an unexpected shape');
  return { upToId: fromBigint(propertyOf(row, 'up_to_id')), holders: holders.map(String), position };
}
