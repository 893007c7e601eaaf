import pTimeout from 'p-timeout';

/** Where a server stands in the WAL: a position, and the timeline it is on (null: not known). */
export type WalPosition = { lsn: string; timeline: number | null };

/**
 * One streaming replica as the routing sees it: its reads (whatever the product reads through,
 * a repository on the replica's pool), and how far it has replayed the WAL.
 */
export type Replica<Reads> = {
  /** host:port, for log lines; never a user or password. */
  name: string;
  /** Reads on this replica; null until a check has opened its pool. */
  reads(): Reads | null;
  /** Called by a check that found the replica answering: open its pool if not yet open. */
  open(): Promise<void>;
  /** What the replica has replayed, on which timeline (null: not a standby). Throws when it does not answer. */
  replayPosition(): Promise<WalPosition | null>;
};

export type ReplicaOptions = {
  /** A replica further behind than this serves no reads until it catches up. */
  maxLagMs: number;
  /** How long a read waits for a replica before it goes to the primary (and the replica is taken out). */
  readDeadlineMs: number;
  now?: () => number;
  log?: (line: string) => void;
};

type State<Reads> = { replica: Replica<Reads>; usable: boolean; lagMs: number; replayed: bigint };

/** Neither timeline is known, or they are the same. */
function sameTimeline(a: number | null, b: number | null): boolean {
  return a === null || b === null || a === b;
}

/**
 * Which replicas may serve reads. A check (at start, then every REPLICA_CHECK_MS) reads the
 * primary's WAL position, then each replica's replay position. Lag is measured against the
 * primary's earlier positions, not the replica's last replayed commit time: a replica that has
 * replayed past what the primary had written at time t lacks nothing older than t, so its lag is
 * at most now - t, and an idle primary (no new commits) does not make a current replica look old.
 * A replica serves reads only once a check found it answering within the bound; one that fails a
 * read is taken out at once, until a check sees it back. While the primary gives no position (a
 * failover), replicas are still checked: see checkOne. Positions compare only on one timeline: a
 * replica that follows another timeline than the primary's (not yet the new primary's after a
 * failover, or one it diverged from) serves no reads, and a primary on a new timeline starts the
 * lag's samples again.
 */
export class ReplicaSet<Reads> {
  private readonly states: State<Reads>[];
  /** The primary's WAL positions at the recent checks, oldest first. */
  private samples: { at: number; lsn: bigint }[] = [];
  /** The primary's timeline at the last check that reached it. */
  private timeline: number | null = null;
  private next = 0;
  private checking = false;
  private readonly now: () => number;
  private readonly log: (line: string) => void;

  constructor(
    private readonly primaryPosition: () => Promise<WalPosition>,
    replicas: Replica<Reads>[],
    readonly options: ReplicaOptions,
  ) {
    this.states = replicas.map((replica) => ({
      replica,
      usable: false,
      lagMs: Number.POSITIVE_INFINITY,
      replayed: 0n,
    }));
    this.now = options.now ?? Date.now;
    this.log = options.log ?? (() => undefined);
  }

  /** A check, unless one is still running (a primary slow to answer): the periodic checks call this. */
  async checkUnlessChecking(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    await this.check().finally(() => (this.checking = false));
  }

  async check(): Promise<void> {
    let primary: bigint | null = null;
    try {
      const position = await this.primaryPosition();
      primary = parseLsn(position.lsn);
      // Positions of another timeline tell nothing of this one's.
      if (!sameTimeline(position.timeline, this.timeline)) this.samples = [];
      this.timeline = position.timeline ?? this.timeline;
    } catch {
      // A primary that is gone (a failover) gives no position: see checkOne.
    }
    if (primary !== null) {
      const at = this.now();
      this.samples.push({ at, lsn: primary });
      // Older samples could only prove a lag beyond the bound.
      while (this.samples.length > 1 && (this.samples[1]?.at ?? at) <= at - this.options.maxLagMs) this.samples.shift();
    }
    await Promise.all(this.states.map((state) => this.checkOne(state, primary !== null)));
  }

  /**
   * Without the primary's position no lag can be measured, but while there is no primary nothing new
   * is written either: a replica that answers and has replayed all the primary had at its last
   * check lacks nothing, and serves reads through the gap (its last measured lag is kept).
   */
  private async checkOne(state: State<Reads>, primaryAnswered: boolean): Promise<void> {
    let lagMs = state.lagMs;
    let usable: boolean;
    let reason: string;
    try {
      const replayed = await this.withinDeadline(state.replica.replayPosition());
      // Not a standby (it has all there is): past any position.
      state.replayed = replayed === null ? BigInt.asUintN(64, -1n) : parseLsn(replayed.lsn);
      if (replayed !== null && !sameTimeline(replayed.timeline, this.timeline)) {
        lagMs = Number.POSITIVE_INFINITY;
        usable = false;
        reason = `follows timeline ${replayed.timeline}, the primary's is ${this.timeline}`;
      } else if (primaryAnswered) {
        lagMs = replayed === null ? 0 : this.lagOf(state.replayed);
        usable = lagMs <= this.options.maxLagMs;
        reason = usable ? 'answers within the lag bound' : `lags more than ${this.options.maxLagMs} ms`;
      } else {
        const lastSeen = this.samples.at(-1)?.lsn;
        usable = lastSeen !== undefined && state.replayed >= lastSeen;
        reason = usable
          ? 'answers, with all the primary had when it was last seen'
          : 'lacks part of what the primary had when it was last seen';
      }
      if (usable) await this.withinDeadline(state.replica.open());
    } catch (error) {
      this.setUsable(state, false, `does not answer (${error instanceof Error ? error.message : String(error)})`);
      return;
    }
    state.lagMs = lagMs;
    this.setUsable(state, usable, reason);
  }

  /** now - the time of the newest primary position the replica has replayed past. */
  private lagOf(replayed: bigint): number {
    for (let i = this.samples.length - 1; i >= 0; i--) {
      const sample = this.samples[i];
      if (sample !== undefined && replayed >= sample.lsn) return this.now() - sample.at;
    }
    return Number.POSITIVE_INFINITY;
  }

  /**
   * The next usable replica's reads (round robin), or null: read from the primary. With
   * `replayedPast` (an LSN), only a replica a check saw replayed at least that far.
   */
  pick(replayedPast?: string): { name: string; reads: Reads } | null {
    const atLeast = replayedPast === undefined ? 0n : parseLsn(replayedPast);
    for (let tried = 0; tried < this.states.length; tried++) {
      const state = this.states[this.next++ % this.states.length];
      const reads = state?.usable && state.replayed >= atLeast ? state.replica.reads() : null;
      if (state !== undefined && reads !== null) return { name: state.replica.name, reads };
    }
    return null;
  }

  /** A read failed or took too long: no reads for this replica until a check sees it back. */
  takeOut(name: string, reason: string): void {
    const state = this.states.find((candidate) => candidate.replica.name === name);
    if (state !== undefined) this.setUsable(state, false, reason);
  }

  /** Lag per replica, for tests and logs. */
  status(): { name: string; usable: boolean; lagMs: number }[] {
    return this.states.map((state) => ({ name: state.replica.name, usable: state.usable, lagMs: state.lagMs }));
  }

  withinDeadline<T>(work: Promise<T>): Promise<T> {
    return pTimeout(work, {
      milliseconds: this.options.readDeadlineMs,
      message: `no answer within ${this.options.readDeadlineMs} ms`,
    });
  }

  private setUsable(state: State<Reads>, usable: boolean, reason: string): void {
    if (state.usable !== usable)
      this.log(`Replica ${state.replica.name} ${usable ? 'serves reads again' : 'taken out of reads'}: ${reason}`);
    state.usable = usable;
  }
}

/** `16/B374D848` → a number that orders like the WAL position. */
export function parseLsn(text: string): bigint {
  const match = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/.exec(text);
  if (match?.[1] === undefined || match[2] === undefined) throw new Error(`not an LSN: ${text}`);
  return (BigInt(`0x${match[1]}`) << 32n) | BigInt(`0x${match[2]}`);
}
