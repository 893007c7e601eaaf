import type { DataSource } from 'typeorm';
import { SettledMarks } from '../application/settled-marks.js';
import type { SettledMark } from '../domain/pet-repository.js';
import { fromBigint } from '../platform/database/bigint.js';
import { translateStoreErrors } from '../platform/database/store-errors.js';
import { PETS_LOCK } from './typeorm-pet-repository.js';

/** How long a mark waits for the creates in flight; creates that arrive meanwhile queue behind it. */
export const SETTLE_LOCK_TIMEOUT_MS = 200;
/** After a mark gave up waiting (a writer holds its transaction open), pages keep the last mark this long. */
export const SETTLE_PAUSE_MS = 1000;

/**
 * One statement, one implicit transaction: the pets lock taken exclusive waits only for the
 * creates in flight (each holds it shared from before its id is drawn until COMMIT), so every id
 * drawn so far is committed or rolled back. PostgreSQL shows a commit to new snapshots before it
 * releases the transaction's locks (docs/performance.md), so every id up to the sequence's last
 * value is settled once the lock is granted. The WAL position, read then, is past every such commit.
 */
const MARK = `WITH waiting AS MATERIALIZED (SELECT set_config('lock_timeout', $1, true)),
  barrier AS MATERIALIZED (SELECT pg_advisory_xact_lock(${PETS_LOCK}) FROM waiting)
  SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence('pets', 'id')::regclass), 0) AS up_to_id,
    pg_current_wal_lsn()::text AS position FROM barrier`;

/**
 * Settled marks read on the primary, shared by the requests of this instance: one statement in
 * flight at a time, and a caller that arrives while one runs shares the next (the one in flight
 * may have read its mark before the caller's own create was acknowledged).
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
    const record = typeof row === 'object' && row !== null ? row : {};
    const position: unknown = Reflect.get(record, 'position');
    if (typeof position !== 'string') throw new Error('the settled mark gave no WAL position');
    return { upToId: fromBigint(Reflect.get(record, 'up_to_id')), position };
  }
}
