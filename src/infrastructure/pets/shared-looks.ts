import { randomUUID } from 'node:crypto';
import type { Clock } from './clock.js';
import type { MarkSnapshot } from './mark-snapshot.js';

// The settled marks' looks shared by the instances (docs/internals.md, "Exact paging"): one
// instance looks at a time, for every instance that asked before its look began.

/** One look, published with the asks it answers; its snapshot null when the look failed. */
export type LookAnswer = { asks: string[]; snapshot: MarkSnapshot | null };

/**
 * Where the instances put their asks and publish their looks (Redis: redis-look-board.ts). An ask
 * is answered only by a look that took it off the board before the look began, so by a look that
 * began after the ask was put: no counter or clock orders asks and looks, and a board that loses
 * its state (a restart, a failover) loses asks, never that order.
 */
export type LookBoard = {
  /**
   * Puts the ask on the board. When no other instance holds the lease to look, `looker` takes it
   * (or keeps it: a lease taken by a command whose reply was lost is its own) and gets the asks on
   * the board back, taken off, its own among them: it looks for them. Otherwise null: the instance
   * that holds the lease takes the ask before its next look.
   */
  ask(id: string, looker: string): Promise<string[] | null>;
  /**
   * Publishes the answer to every instance. Then, while `looker` holds the lease, takes the asks
   * put since, for its next look. With none, the lease is kept when `keep` (the looker has asks of
   * its own left: the answer is []), else given up. Null when the looker no longer holds it.
   */
  answer(answer: LookAnswer, looker: string, then: { keep: boolean }): Promise<string[] | null>;
  /** Every answer published from now on, by any instance. One may come late, or never. */
  onAnswer(listener: (answer: LookAnswer) => void): void;
  /** False while published answers cannot arrive (the board's subscription is down). */
  listening(): boolean;
};

export type SharedLookOptions = {
  /**
   * How long an ask waits for another instance's look before this instance looks itself: the look
   * in flight and the next one take a few milliseconds, so this is a look far slower than usual,
   * a looker gone, or an answer lost.
   */
  answerWaitMs: number;
  /** After the board failed, how long this instance looks for itself before it tries the board again. */
  retryMs: number;
};

export const SHARED_LOOK_OPTIONS: SharedLookOptions = { answerWaitMs: 250, retryMs: 1000 };

type Outcome = { snapshot: MarkSnapshot } | { error: unknown } | { lookYourself: true };

/** One ask of this instance, until its outcome arrives. */
class Ask {
  outcome: Outcome | null = null;
  /** Taken by this instance's own look, which the ask waits for however long it takes. */
  lookedHere = false;
  private readonly arrival = Promise.withResolvers<void>();
  readonly arrived = this.arrival.promise;

  settle(outcome: Outcome): void {
    this.outcome = outcome;
    this.arrival.resolve();
  }
}

/**
 * Looks at the store shared by the instances through a LookBoard: `look()` resolves with a snapshot
 * read by a look that began after it was called, on this instance or another. Every look made for
 * the board is published, numbered (LookOrder), to every instance: `onLook` hears them. While the
 * board fails, or an answer does not come in time, this instance looks itself, as it would alone.
 */
export class SharedLooks {
  /** This instance on the board: its asks and its lease carry it. */
  readonly instance = randomUUID();
  private asked = 0;
  private readonly waiting = new Map<string, Ask>();
  /** The looks this instance made for the board, numbered one after another. */
  private looked = 0;
  private readonly lookListeners: ((snapshot: MarkSnapshot) => void)[] = [];
  /** When the board last failed; null while it works. */
  private failedAt: number | null = null;
  /** While this instance looks for the asks it took: those taken meanwhile, for its next look. */
  private nextLook: string[] | null = null;

  constructor(
    private readonly board: LookBoard,
    private readonly ownLook: () => Promise<MarkSnapshot>,
    private readonly options: SharedLookOptions,
    private readonly clock: Clock,
    private readonly log: (line: string) => void,
  ) {
    board.onAnswer((answer) => this.answered(answer));
  }

  readonly look = async (): Promise<MarkSnapshot> => {
    if (!this.shares()) return this.ownLook();
    const id = `${this.instance}/${++this.asked}`;
    const ask = new Ask();
    this.waiting.set(id, ask);
    if (this.nextLook !== null) {
      // This instance looks already: its next look begins after this ask, and answers it.
      this.lookFor([id]);
    } else {
      let taken: string[] | null;
      try {
        taken = await this.board.ask(id, this.instance);
      } catch (error) {
        this.waiting.delete(id);
        this.failed(error);
        return this.ownLook();
      }
      this.works();
      if (taken !== null) this.lookFor(taken);
    }
    await this.clock.sleep(this.options.answerWaitMs, ask.arrived);
    // A look of this instance's own is waited for: it ends within the store's statement limit.
    if (ask.outcome === null && ask.lookedHere) await ask.arrived;
    this.waiting.delete(id);
    const outcome = ask.outcome;
    if (outcome === null || 'lookYourself' in outcome) return this.ownLook();
    if ('error' in outcome) throw outcome.error;
    return outcome.snapshot;
  };

  /** Hears every look any instance published, this one's included. */
  onLook(listener: (snapshot: MarkSnapshot) => void): void {
    this.lookListeners.push(listener);
  }

  /** Null while looks are shared, else why each instance looks for itself. */
  degradation(): string | null {
    return this.failedAt === null ? null : 'Redis does not answer: each instance reads its own settled marks';
  }

  /**
   * Looks for the asks taken, then for those put meanwhile, while any are: one loop per instance.
   * Asks taken while it runs (the lease is this instance's already) join its next look.
   */
  private lookFor(taken: string[]): void {
    this.markLookedHere(taken);
    if (this.nextLook !== null) {
      this.nextLook.push(...taken);
      return;
    }
    this.nextLook = [];
    void this.lookWhileTaken(taken);
  }

  private async lookWhileTaken(taken: string[]): Promise<void> {
    let asks = taken;
    try {
      while (asks.length > 0) {
        let snapshot: MarkSnapshot | null = null;
        try {
          snapshot = { ...(await this.ownLook()), look: { looker: this.instance, seq: ++this.looked } };
          this.settle(asks, { snapshot });
        } catch (error) {
          // This instance's callers get the store's error; the other instances look themselves.
          this.settle(asks, { error });
        }
        let next: string[] | null = null;
        try {
          next = await this.board.answer({ asks, snapshot }, this.instance, { keep: (this.nextLook?.length ?? 0) > 0 });
        } catch (error) {
          // The lease lapses on the board; the asks left on it are looked for by their own instances.
          this.failed(error);
        }
        asks = [...(next ?? []), ...(this.nextLook?.splice(0) ?? [])];
        this.markLookedHere(asks);
      }
    } finally {
      // In the turn that found no ask left: none joins a loop that has ended.
      this.nextLook = null;
    }
  }

  private markLookedHere(asks: string[]): void {
    for (const id of asks) {
      const ask = this.waiting.get(id);
      if (ask !== undefined) ask.lookedHere = true;
    }
  }

  private answered({ asks, snapshot }: LookAnswer): void {
    this.settle(
      asks.filter((id) => this.isOwn(id)),
      snapshot === null ? { lookYourself: true } : { snapshot },
    );
    if (snapshot !== null) for (const listener of this.lookListeners) listener(snapshot);
  }

  private settle(asks: string[], outcome: Outcome): void {
    for (const id of asks) {
      this.waiting.get(id)?.settle(outcome);
      this.waiting.delete(id);
    }
  }

  private isOwn(id: string): boolean {
    return id.startsWith(`${this.instance}/`);
  }

  /** Whether this look goes through the board: not while it is silent, nor for `retryMs` after it failed. */
  private shares(): boolean {
    if (this.failedAt !== null && this.clock.now() - this.failedAt < this.options.retryMs) return false;
    if (this.board.listening()) return true;
    this.failed(new Error('its subscription is down'));
    return false;
  }

  private failed(error: unknown): void {
    if (this.failedAt === null)
      this.log(
        `Settled marks: Redis failed (${error instanceof Error ? error.message : String(error)}); each instance looks for itself`,
      );
    this.failedAt = this.clock.now();
  }

  private works(): void {
    if (this.failedAt !== null) this.log('Settled marks: Redis answers again; the instances share their looks');
    this.failedAt = null;
  }
}
