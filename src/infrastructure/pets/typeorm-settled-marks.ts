import type { DataSource } from 'typeorm';
import { propertyOf } from '../../application/platform/property-of.js';
import { NO_MARK_EVENTS, type SettledMarkEvents } from '../../application/platform/settled-mark-events.js';
import { fromBigint } from '../platform/database/bigint.js';
import { IDLE_IN_TRANSACTION_MS, STATEMENT_TIMEOUT_MS } from '../platform/database/database.js';
import { translateStoreErrors } from '../platform/database/store-errors.js';
import { prepared } from './typeorm-pet-repository.js';
import {
  type MarkSnapshot,
  SharedSettledMarks,
  type SharedMarksOptions,
  SYSTEM_CLOCK,
} from './shared-settled-marks.js';

/**
 * A writer holds the pets lock at most until PostgreSQL ends it: a statement, then its session
 * idle in the transaction; the margin is for the commit and the looks themselves.
 */
export const MARK_WAIT_LIMIT_MS = STATEMENT_TIMEOUT_MS + IDLE_IN_TRANSACTION_MS + 1000;
export const MARK_OPTIONS: SharedMarksOptions = { waitLimitMs: MARK_WAIT_LIMIT_MS, minPollMs: 2, maxPollMs: 50 };

/**
 * One statement, each step reading after the one before: the sequence's last value, then the
 * sessions holding the pets lock (PETS_LOCK, a bigint key: classid is its high half, objid its
 * low), then the WAL position. The correlated subquery runs for the row `drawn` gave, so after
 * it; the position is read for the row `holding` gave. Why every id up to the value is settled
 * once those holders have ended: docs/internals.md, "Exact paging".
 */
const LOOK = prepared(
  'pets_settled_mark',
  `WITH drawn AS MATERIALIZED (
    SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence('pets', 'id')::regclass), 0) AS up_to_id),
  holding AS MATERIALIZED (
    SELECT up_to_id, ARRAY(SELECT virtualtransaction FROM pg_locks
      WHERE locktype = 'advisory' AND classid = 0 AND objid = 'pets'::regclass::oid AND objsubid = 1
        AND granted AND pid <> pg_backend_pid() AND drawn.up_to_id IS NOT NULL) AS holders
    FROM drawn)
  SELECT up_to_id::text, holders, pg_current_wal_lsn()::text AS position FROM holding`,
);

/** Settled marks read on the primary, shared by the requests of this instance (SharedSettledMarks). */
export class TypeOrmSettledMarks extends SharedSettledMarks {
  constructor(primary: DataSource, options = MARK_OPTIONS, events: SettledMarkEvents = NO_MARK_EVENTS) {
    super(() => translateStoreErrors(() => look(primary)), options, SYSTEM_CLOCK, events);
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
