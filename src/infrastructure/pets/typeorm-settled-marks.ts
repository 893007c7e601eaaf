import type { DataSource } from 'typeorm';
import { type SettledMark, SettledMarks } from '../../domain/pets/pet-repository.js';
import { propertyOf } from '../../application/platform/property-of.js';
import { fromBigint } from '../platform/database/bigint.js';
import { translateStoreErrors } from '../platform/database/store-errors.js';
import { PETS_LOCK } from './typeorm-pet-repository.js';

/** How long a mark waits for the creates in flight; creates that arrive meanwhile queue behind it. */
export const SETTLE_LOCK_TIMEOUT_MS = 200;
/** After a mark gave up waiting (a writer holds its transaction open), pages keep the last mark this long. */
export const SETTLE_PAUSE_MS = 1000;

/**
 * One statement: the pets lock taken exclusive, then the sequence's last value and the WAL
 * position. Why every id up to that value is then settled: docs/internals.md, "Exact paging".
 */
const MARK = `WITH waiting AS MATERIALIZED (SELECT set_config('lock_timeout', $1, true)),
  barrier AS MATERIALIZED (SELECT pg_advisory_xact_lock(${PETS_LOCK}) FROM waiting)
  SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence('pets', 'id')::regclass), 0) AS up_to_id,
    pg_current_wal_lsn()::text AS position FROM barrier`;

/**
 * Settled marks read on the primary, shared by the requests of this instance: one statement in
 * flight at a time; a caller that arrives while one runs shares the next, since the one in flight
 * may have read its mark before the caller's own create was acknowledged.
 */
export class TypeOrmSettledMarks extends SettledMarks {
  private mark: SettledMark | null = null;
  private reading: Promise<SettledMark> | null = null;
  private next: Promise<SettledMark> | null = null;
  private pausedUntil = 0;

  constructor(
    private readonly primary: DataSource,
    private readonly options = { lockTimeoutMs: SETTLE_LOCK_TIMEOUT_MS, pauseMs: SETTLE_PAUSE_MS },
    private readonly now: () => number = Date.now,
  ) {
    super();
  }

  last(): SettledMark | null {
    return this.mark;
  }

  fresh(): Promise<SettledMark> {
    if (this.mark !== null && this.now() < this.pausedUntil) return Promise.resolve(this.mark);
    if (this.reading === null) return (this.reading = this.read());
    this.next ??= this.reading
      .then(
        () => undefined,
        () => undefined,
      )
      .then(() => {
        this.next = null;
        return (this.reading ??= this.read());
      });
    return this.next;
  }

  private async read(): Promise<SettledMark> {
    try {
      // One statement at a time, so each mark read is later than the one before.
      this.mark = await translateStoreErrors(() => this.readMark());
      return this.mark;
    } catch (error) {
      // A writer slow to commit (or a primary that does not answer): serving up to the last mark
      // is still exact, and new creates are not held behind another barrier for a while.
      this.pausedUntil = this.now() + this.options.pauseMs;
      if (this.mark !== null) return this.mark;
      throw error;
    } finally {
      this.reading = null;
    }
  }

  private async readMark(): Promise<SettledMark> {
    const rows: unknown = await this.primary.query(MARK, [`${this.options.lockTimeoutMs}ms`]);
    const row: unknown = Array.isArray(rows) ? rows[0] : undefined;
    const position = propertyOf(row, 'position');
    if (typeof position !== 'string') throw new Error('the settled mark gave no WAL position');
    return { upToId: fromBigint(propertyOf(row, 'up_to_id')), position };
  }
}
