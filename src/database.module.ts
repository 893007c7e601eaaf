import { Logger, Module } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { DatabasePool } from './application/platform/database-pool.js';
import { Readiness } from './application/platform/readiness.js';
import { ReplicaStatus } from './application/platform/replica-status.js';
import { type Config, petstoreConfig } from './infrastructure/platform/config.js';
import { DatabaseReadiness } from './infrastructure/platform/database/database-readiness.js';
import { DatabaseServer, openDatabaseServer } from './infrastructure/platform/database/database-server.js';
import { openDataSource } from './infrastructure/platform/database/database.js';
import { ReplicaSetStatus } from './infrastructure/platform/database/replica-set-status.js';
import { TypeOrmDatabasePool } from './infrastructure/platform/database/typeorm-database-pool.js';
import { TypeOrmReplicas } from './infrastructure/platform/database/typeorm-replicas.js';
import { waitForDatabase } from './infrastructure/platform/database/wait-for-database.js';
import { dataSourceOptions } from './infrastructure/schema/data-source-options.js';
import { startupLogger } from './interface/http/platform/logging.js';

const CONFIG = petstoreConfig.KEY;
const DATA_SOURCE = getDataSourceToken();

/** The PostgreSQL server, started (embedded) or waited for, before TypeORM connects to it. */
@Module({
  providers: [{ provide: DatabaseServer, inject: [CONFIG], useFactory: databaseServerFor }],
  exports: [DatabaseServer],
})
class DatabaseServerModule {}

/**
 * The platform's PostgreSQL: the server, TypeORM's data source on it (migrated at start, never
 * synchronized), the streaming replicas that serve reads, and what the edge asks of them
 * (readiness, pool usage, replica status). The products bind their own adapters on the data source.
 */
@Module({
  imports: [
    DatabaseServerModule,
    TypeOrmModule.forRootAsync({
      imports: [DatabaseServerModule],
      inject: [DatabaseServer],
      // No retries here: databaseServerFor already waited, with one line per try.
      useFactory: (server: DatabaseServer) => ({
        ...dataSourceOptions(server.url, server.schema),
        migrationsRun: true,
        retryAttempts: 0,
      }),
      dataSourceFactory: async (options) => {
        if (options === undefined) throw new Error('TypeORM options are missing');
        const logger = new Logger('Database');
        return openDataSource(options, (count) =>
          logger.warn(`A database connection went silent: ${count} connection(s) dropped, new ones will be opened`),
        );
      },
    }),
  ],
  providers: [
    {
      provide: TypeOrmReplicas,
      inject: [DATA_SOURCE, CONFIG, DatabaseServer, SchedulerRegistry],
      useFactory: replicasFor,
    },
    { provide: DatabasePool, inject: [DATA_SOURCE], useFactory: (ds: DataSource) => new TypeOrmDatabasePool(ds) },
    { provide: Readiness, inject: [DATA_SOURCE], useFactory: (ds: DataSource) => new DatabaseReadiness(ds) },
    {
      provide: ReplicaStatus,
      inject: [TypeOrmReplicas],
      useFactory: (replicas: TypeOrmReplicas) => new ReplicaSetStatus(replicas.set),
    },
  ],
  // What PetsModule, ObservabilityModule and HealthModule inject; main.ts takes DatabaseServer from the app.
  exports: [TypeOrmReplicas, DatabasePool, Readiness, ReplicaStatus],
})
export class DatabaseModule {}

async function databaseServerFor(config: Config): Promise<DatabaseServer> {
  const server = await openDatabaseServer(config);
  const logger = startupLogger(config.log);
  await waitForDatabase(server.url, config.databaseWaitSeconds, (line) => logger.warn({ context: 'Database' }, line));
  return server;
}

function replicasFor(
  ds: DataSource,
  config: Config,
  server: DatabaseServer,
  scheduler: SchedulerRegistry,
): TypeOrmReplicas {
  const logger = new Logger('Replicas');
  // Its checks start in its onApplicationBootstrap.
  return new TypeOrmReplicas(ds, config.databaseReplicaUrls, {
    maxLagSeconds: config.databaseReplicaMaxLagSeconds,
    optionsFor: (url, waits) => dataSourceOptions(url, server.schema, waits),
    log: (line) => logger.warn(line),
    scheduler,
  });
}
