import type { DataSource } from 'typeorm';
import { UnguardedStoreError } from '../../application/pets/errors.js';
import { fromBigint } from '../platform/database/bigint.js';
import { IDLE_IN_TRANSACTION_MS, STATEMENT_TIMEOUT_MS } from '../platform/database/database.js';
import { translateStoreErrors } from '../platform/database/store-errors.js';
import { propertyOf } from '../platform/property-of.js';
import type { HighWaterMarkOptions, Reading } from './high-water-marks.js';
import { PRIMARY_TIMELINE } from '../platform/database/typeorm-replicas.js';
import { prepared } from './typeorm-pet-repository.js';

// The SQL of a high-water mark's reading on the primary, and the checks of what it rests on
// (docs/internals.md, "Exact paging": each assumption, what guards it, the test that breaks it).

/**
 * The transactions writing pets: every INSERT (COPY, MERGE, a trigger's insert) holds the table's
 * RowExclusiveLock from before it makes its first row, so before its id is drawn, until its
 * transaction ends. These are the lockers PostgreSQL's own WaitForLockers waits for before
 * CREATE INDEX CONCURRENTLY builds (the modes that conflict with ShareLock), less the ones that
 * cannot insert: VACUUM and ANALYZE hold ShareUpdateExclusiveLock, and stronger modes keep every
 * writer out while held. A prepared transaction shows with no pid.
 */
export const WRITERS_OF_PETS = `locktype = 'relation' AND relation = 'pets'::regclass
  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND mode = 'RowExclusiveLock' AND granted AND pid IS DISTINCT FROM pg_backend_pid()`;

/** The pets triggers the migrations make, each of which must fire ALWAYS ('A' in pg_trigger.tgenabled). */
export const PETS_TRIGGERS = ['pets_note_id_floor', 'pets_refuse_id'] as const;

/**
 * One statement, each step reading after the one before: the sequence's last value, then the
 * writers (WRITERS_OF_PETS), then the WAL insert position and timeline. The correlated subquery runs
 * for the row `drawn` gave, so after it; the position is read for the row `writing` gave. The
 * insert position, not the write position: an asynchronous commit (synchronous_commit off, for the
 * server, a role or a session) releases its locks with its commit record still in the WAL buffers,
 * before the write position. The rest is what the reading rests on, checked at every reading.
 */
const READING = prepared(
  'pets_high_water_mark',
  `WITH drawn AS MATERIALIZED (
    SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence('pets', 'id')::regclass), 0) AS up_to_id),
  writing AS MATERIALIZED (
    SELECT up_to_id, ARRAY(SELECT virtualtransaction FROM pg_locks WHERE ${WRITERS_OF_PETS} AND drawn.up_to_id IS NOT NULL) AS writers
    FROM drawn)
  SELECT up_to_id::text, writers, pg_current_wal_insert_lsn()::text AS lsn, ${PRIMARY_TIMELINE} AS timeline,
    (SELECT coalesce(max(id), 0) FROM pets)::text AS max_id,
    (SELECT seqcache FROM pg_sequence WHERE seqrelid = pg_get_serial_sequence('pets', 'id')::regclass)::text AS cache,
    ARRAY(SELECT tgname || '=' || tgenabled::text FROM pg_trigger WHERE tgrelid = 'pets'::regclass AND NOT tgisinternal) AS triggers
  FROM writing`,
);

/** What a reading found of the guards: the sequence against the ids stored, its cache, the triggers' states. */
export type GuardFacts = { upToId: number; maxId: number; cache: number; triggers: string[] };

/**
 * What stops the store vouching for its ids, or null. A trigger not firing ALWAYS (disabled, or
 * skipped by sessions with session_replication_role = replica) would let an id in that was given,
 * cached, or drawn from a sequence set back; a sequence behind the ids stored hands out ids
 * below pages already served. A sequence cache is no problem here: the triggers refuse cached ids
 * (and the service's creates retry them), see cacheWarning.
 */
export function guardProblem({ upToId, maxId, triggers }: GuardFacts): string | null {
  const states = new Map(triggers.map((entry) => [entry.slice(0, entry.lastIndexOf('=')), entry.at(-1)]));
  for (const name of PETS_TRIGGERS) {
    const state = states.get(name);
    if (state === 'A') continue;
    const why = state === undefined ? 'is missing' : state === 'D' ? 'is disabled' : 'does not fire ALWAYS';
    return `the pets trigger ${name} ${why}: run ALTER TABLE pets ENABLE ALWAYS TRIGGER ${name} (npm run migration:run makes it if it is missing)`;
  }
  if (upToId < maxId)
    return `the sequence pets_id_seq (at ${upToId}) is behind ids already stored (up to ${maxId}): run SELECT setval('pets_id_seq', (SELECT max(id) FROM pets))`;
  return null;
}

/** Said once while the sequence caches ids: the service keeps its promises, at a retried create per cached id. */
export function cacheWarning(cache: number): string | null {
  return cache > 1
    ? `the sequence pets_id_seq caches ${cache} ids per session: the database refuses an id drawn from a cache, so creates are retried; run ALTER SEQUENCE pets_id_seq CACHE 1`
    : null;
}

/**
 * A writer holds the table lock at most until PostgreSQL ends it: a statement, then its session
 * idle in the transaction (the service's own writers; others are waited for as long); the margin
 * is for the commit and the readings themselves.
 */
export const MARK_WAIT_LIMIT_MS = STATEMENT_TIMEOUT_MS + IDLE_IN_TRANSACTION_MS + 1000;
export const MARK_OPTIONS: HighWaterMarkOptions = { waitLimitMs: MARK_WAIT_LIMIT_MS, minPollMs: 2, maxPollMs: 50 };

/**
 * Readings on the primary. Throws UnguardedStoreError while a guard is off (the error filter says
 * so in the log, once), and says once when the sequence starts or stops caching ids.
 */
export class TypeOrmHighWaterMarkReading {
  private saidOfTheCache: string | null = null;

  constructor(
    private readonly primary: DataSource,
    private readonly log: (line: string) => void = () => undefined,
  ) {}

  readonly read = (): Promise<Reading> => translateStoreErrors(() => this.readOnce());

  private async readOnce(): Promise<Reading> {
    const rows: unknown = await this.primary.query(READING);
    const row: unknown = Array.isArray(rows) ? rows[0] : undefined;
    const lsn = propertyOf(row, 'lsn');
    const writers = propertyOf(row, 'writers');
    const triggers = propertyOf(row, 'triggers');
    const timeline = propertyOf(row, 'timeline');
    if (typeof lsn !== 'string' || typeof timeline !== 'number' || !Array.isArray(writers) || !Array.isArray(triggers))
      throw new Error('the high-water mark reading of an unexpected shape');
    const upToId = fromBigint(propertyOf(row, 'up_to_id'));
    const facts = {
      upToId,
      maxId: fromBigint(propertyOf(row, 'max_id')),
      cache: Number(propertyOf(row, 'cache') ?? 1),
      triggers: triggers.map(String),
    };
    this.sayOfTheCache(cacheWarning(facts.cache));
    const problem = guardProblem(facts);
    if (problem !== null) throw new UnguardedStoreError(problem);
    return { upToId, writers: writers.map(String), lsn, timeline };
  }

  private sayOfTheCache(line: string | null): void {
    if (line === this.saidOfTheCache) return;
    this.log(`Paging: ${line ?? 'the id sequence no longer caches ids'}`);
    this.saidOfTheCache = line;
  }
}
