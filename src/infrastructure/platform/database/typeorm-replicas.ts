import type { SchedulerRegistry } from '@nestjs/schedule';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { type DatabaseWaits, openDataSource } from './database.js';
import { queryOnce } from './pg-probe.js';
import { type Replica, ReplicaSet, type WalPosition } from './replica-set.js';
import { propertyOf } from '../property-of.js';

/** How long a read waits for a replica before it goes to the primary: a stopped replica costs a read at most this. */
export const REPLICA_READ_DEADLINE_MS = 500;
/** A primary's timeline, from the name of the WAL file it writes (the first eight hex digits). */
export const PRIMARY_TIMELINE = `('x' || substr(pg_walfile_name(pg_current_wal_insert_lsn()), 1, 8))::bit(32)::int`;
/** How often each instance measures its replicas' lag and looks for one that came back. */
export const REPLICA_CHECK_MS = 500;

/**
 * The replicas of DATABASE_REPLICA_URLS, each with a pool of its own opened by the first check
 * that finds it answering (a replica that is down at start-up does not stop the service), and the
 * checks that keep the ReplicaSet current: once the app is up (onApplicationBootstrap), then on
 * @nestjs/schedule's interval, which the app stops when it closes (then onApplicationShutdown
 * closes the pools).
 */
export class TypeOrmReplicas {
  readonly set: ReplicaSet<DataSource>;
  private readonly replicas: PgReplica[];
  private readonly scheduler: SchedulerRegistry | null;

  constructor(
    primary: DataSource,
    urls: string[],
    options: {
      maxLagSeconds: number;
      /** The primary's data source options for another server, with other waits. */
      optionsFor: (url: string, waits: DatabaseWaits) => DataSourceOptions;
      log?: (line: string) => void;
      /** Where the checks' interval goes (the app's); without one, the checks are the caller's. */
      scheduler?: SchedulerRegistry;
    },
  ) {
    this.scheduler = options.scheduler ?? null;
    this.replicas = urls.map((url) => new PgReplica(url, options.optionsFor));
    // The write position: a replica can replay only what the primary has written out.
    const primaryPosition = async (): Promise<WalPosition> => {
      const rows: unknown = await primary.query(
        `SELECT pg_current_wal_lsn()::text AS lsn, ${PRIMARY_TIMELINE} AS timeline`,
      );
      const row: unknown = Array.isArray(rows) ? rows[0] : undefined;
      const lsn = propertyOf(row, 'lsn');
      const timeline = propertyOf(row, 'timeline');
      if (typeof lsn !== 'string' || typeof timeline !== 'number') throw new Error('the primary gave no WAL position');
      return { lsn, timeline };
    };
    this.set = new ReplicaSet(primaryPosition, this.replicas, {
      maxLagMs: options.maxLagSeconds * 1000,
      readDeadlineMs: REPLICA_READ_DEADLINE_MS,
      log: options.log,
    });
  }

  get none(): boolean {
    return this.replicas.length === 0;
  }

  /**
   * Nest calls it once the app is up: a check at once, then every REPLICA_CHECK_MS on an interval
   * of @nestjs/schedule's registry, which the app clears when it closes. Without replicas, or
   * without a scheduler, nothing is scheduled.
   */
  onApplicationBootstrap(): void {
    const scheduler = this.scheduler;
    if (this.none || scheduler === null) return;
    const check = (): void => void this.set.checkUnlessChecking();
    check();
    scheduler.addInterval('replica-checks', setInterval(check, REPLICA_CHECK_MS));
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all(this.replicas.map((replica) => replica.close()));
  }
}

class PgReplica implements Replica<DataSource> {
  readonly name: string;
  private dataSource: DataSource | null = null;
  private opening: Promise<void> | null = null;

  constructor(
    private readonly url: string,
    private readonly optionsFor: (url: string, waits: DatabaseWaits) => DataSourceOptions,
  ) {
    const parsed = new URL(url);
    this.name = `${parsed.hostname}:${parsed.port || 5432}`;
  }

  reads(): DataSource | null {
    return this.dataSource;
  }

  open(): Promise<void> {
    if (this.dataSource !== null) return Promise.resolve();
    this.opening ??= this.connect().finally(() => (this.opening = null));
    return this.opening;
  }

  private async connect(): Promise<void> {
    // The primary's pool settings, with waits short enough for the read deadline: a replica that
    // does not answer is given up on, and the read goes to the primary.
    const options = this.optionsFor(this.url, {
      connectMs: REPLICA_READ_DEADLINE_MS,
      statementMs: REPLICA_READ_DEADLINE_MS,
    });
    // Opened like the primary's, so that connections that go silent are dropped, not lent out again.
    const dataSource = await openDataSource({ ...options, migrationsRun: false });
    this.dataSource = dataSource;
  }

  /**
   * On a connection of its own, not the pool's: a pool whose connections hang would hang the check
   * too. The timeline is its WAL receiver's, when the role may read it (else null: not known).
   */
  async replayPosition(): Promise<WalPosition | null> {
    const [row] = await queryOnce<{ lsn: string | null; timeline: number | null }>(
      this.url,
      'SELECT pg_last_wal_replay_lsn()::text AS lsn, (SELECT received_tli FROM pg_stat_wal_receiver) AS timeline',
      REPLICA_READ_DEADLINE_MS,
    );
    return row?.lsn == null ? null : { lsn: row.lsn, timeline: row.timeline ?? null };
  }

  async close(): Promise<void> {
    await this.opening?.catch(() => undefined);
    if (this.dataSource?.isInitialized) await this.dataSource.destroy();
  }
}
