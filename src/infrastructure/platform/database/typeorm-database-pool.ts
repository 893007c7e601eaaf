import pg from 'pg';
import type { DataSource } from 'typeorm';
import { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';
import { DatabasePool, type PoolUsage } from '../../../application/platform/database-pool.js';

/**
 * The pg pool behind TypeORM's PostgreSQL driver: `PostgresDriver.master`, a public member typed
 * `any` (docs/internals.md). It is a pg.Pool of this process's pg because the data source
 * options hand TypeORM that pg as its `driver`.
 */
export function poolOf(dataSource: DataSource): pg.Pool | null {
  const { driver } = dataSource;
  return driver instanceof PostgresDriver && driver.master instanceof pg.Pool ? driver.master : null;
}

/** How the service's connections are used, for metrics. */
export class TypeOrmDatabasePool extends DatabasePool {
  constructor(private readonly dataSource: DataSource) {
    super();
  }

  usage(): PoolUsage {
    const pool = poolOf(this.dataSource);
    return pool === null
      ? { total: 0, idle: 0, waiting: 0 }
      : { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount };
  }
}
