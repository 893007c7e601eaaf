import { Interval } from '@nestjs/schedule';
import type { DataSource } from 'typeorm';
import { propertyOf } from '../platform/property-of.js';

/** How often expired records are looked for. */
export const CLEANUP_EVERY_MS = 60_000;

export type CleanupOptions = {
  /** The most records one statement removes: each DELETE stays short, whatever the backlog. */
  batchSize: number;
  log: (line: string) => void;
};

export const CLEANUP_BATCH_SIZE = 1_000;

/**
 * Removes expired idempotency records outside requests, so that the table stays bounded (a day of
 * keys and one interval more) and a keyed create spends no statement on it. Run on
 * @nestjs/schedule's interval, which the app stops when it closes. Every instance runs one: SKIP
 * LOCKED lets them, and a create taking over an expired row, pass each other without waiting.
 */
export class IdempotencyKeysCleanup {
  private running: Promise<void> | null = null;
  private stopped = false;

  constructor(
    private readonly dataSource: DataSource,
    private readonly options: CleanupOptions,
  ) {}

  /** Removes every expired record, a batch at a time; resolves with how many went. */
  async sweep(): Promise<number> {
    let removed = 0;
    for (;;) {
      // By ctid, locked by the subquery: a TID scan, and no row changes under it before it goes.
      const [row] = await this.dataSource.query<unknown[]>(
        `WITH gone AS (
           DELETE FROM idempotency_keys WHERE ctid IN (
             SELECT ctid FROM idempotency_keys WHERE expires_at <= now() LIMIT $1 FOR UPDATE SKIP LOCKED)
           RETURNING 1)
         SELECT count(*)::int AS removed FROM gone`,
        [this.options.batchSize],
      );
      const batch = propertyOf(row, 'removed');
      if (typeof batch !== 'number') throw new Error('idempotency cleanup returned no count');
      removed += batch;
      if (batch < this.options.batchSize || this.stopped) return removed;
    }
  }

  /** Nest calls it on close, before the data source is destroyed: no sweep is left half-way. */
  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    await this.running;
  }

  @Interval('idempotency-keys-cleanup', CLEANUP_EVERY_MS)
  sweepInBackground(): void {
    // A sweep slower than the interval is not overlapped by the next one.
    if (this.running !== null || this.stopped) return;
    this.running = this.sweep()
      .then(
        () => undefined,
        (error: unknown) =>
          this.options.log(
            `Expired idempotency records were not removed (tried again in ${CLEANUP_EVERY_MS} ms): ${String(error)}`,
          ),
      )
      .finally(() => (this.running = null));
  }
}
