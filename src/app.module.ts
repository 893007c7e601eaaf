import { Logger, Module } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { LoggerModule } from 'nestjs-pino';
import type { DataSource } from 'typeorm';
import { ApiKeys } from './application/api-keys.js';
import { CreatePet } from './application/create-pet.js';
import { DatabasePool } from './application/database-pool.js';
import { GetPet } from './application/get-pet.js';
import { IdempotencyStore } from './application/idempotency-store.js';
import { ListPets } from './application/list-pets.js';
import { RateLimits } from './application/rate-limits.js';
import { Readiness } from './application/readiness.js';
import { ReplicaStatus } from './application/replica-status.js';
import { type Config, petstoreConfig } from './config.js';
import { PetRepository } from './domain/pet-repository.js';
import { DatabaseReadiness } from './infrastructure/database-readiness.js';
import { DatabaseServer, openDatabaseServer } from './infrastructure/database-server.js';
import { dataSourceOptions, openDataSource } from './infrastructure/database.js';
import { sharedSecret } from './infrastructure/shared-secrets.js';
import { TypeOrmDatabasePool } from './infrastructure/typeorm-database-pool.js';
import { waitForDatabase } from './infrastructure/wait-for-database.js';
import { connectRedis, FlexibleRateLimits, NoRateLimits } from './infrastructure/rate-limits.js';
import { ApiKeyRecord } from './infrastructure/api-key.record.js';
import { PetRecord } from './infrastructure/pet.record.js';
import { TypeOrmApiKeys } from './infrastructure/typeorm-api-keys.js';
import { TypeOrmIdempotencyStore } from './infrastructure/typeorm-idempotency-store.js';
import { TypeOrmPetRepository } from './infrastructure/typeorm-pet-repository.js';
import { ReplicaRoutingPetRepository } from './infrastructure/replica-reads.js';
import { ReplicaSetStatus } from './infrastructure/replica-set-status.js';
import { TypeOrmReplicas } from './infrastructure/typeorm-replicas.js';
import { BearerKeyGuard } from './interface/http/bearer-key.guard.js';
import { CursorCodec } from './interface/http/cursor.js';
import { ErrorFilter } from './interface/http/error.filter.js';
import { HealthController } from './interface/http/health.controller.js';
import { loggerParams, startupLogger } from './interface/http/logging.js';
import { HttpMetrics, MetricsController } from './interface/http/metrics.js';
import { PetsController } from './interface/http/pets.controller.js';
import { ShutdownState } from './interface/http/shutdown-state.js';

const CONFIG = petstoreConfig.KEY;
const DATA_SOURCE = getDataSourceToken();

/** The PostgreSQL server, started (embedded) or waited for, before TypeORM connects to it. */
@Module({
  providers: [{ provide: DatabaseServer, inject: [CONFIG], useFactory: databaseServerFor }],
  exports: [DatabaseServer],
})
export class DatabaseServerModule {}

/**
 * The composition root: every port bound to its adapter, every use case built by hand, here and
 * only here. Tests replace providers (the configuration, the database server) with Nest's testing
 * module, not with code paths of their own.
 */
@Module({
  imports: [
    ConfigModule.forRoot({ isGlobal: true, load: [petstoreConfig] }),
    LoggerModule.forRootAsync({ inject: [CONFIG], useFactory: (config: Config) => loggerParams(config.log) }),
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
  controllers: [PetsController, HealthController, MetricsController],
  providers: [
    { provide: TypeOrmReplicas, inject: [DATA_SOURCE, CONFIG, DatabaseServer], useFactory: replicasFor },
    {
      provide: PetRepository,
      inject: [DATA_SOURCE, TypeOrmReplicas],
      useFactory: (ds: DataSource, replicas: TypeOrmReplicas) => {
        const primary = new TypeOrmPetRepository(ds.getRepository(PetRecord));
        return replicas.none ? primary : new ReplicaRoutingPetRepository(primary, replicas.set);
      },
    },
    {
      provide: IdempotencyStore,
      inject: [DATA_SOURCE],
      useFactory: (ds: DataSource) => new TypeOrmIdempotencyStore(ds),
    },
    { provide: DatabasePool, inject: [DATA_SOURCE], useFactory: (ds: DataSource) => new TypeOrmDatabasePool(ds) },
    { provide: Readiness, inject: [DATA_SOURCE], useFactory: (ds: DataSource) => new DatabaseReadiness(ds) },
    {
      provide: ApiKeys,
      inject: [DATA_SOURCE, CONFIG],
      useFactory: (ds: DataSource, config: Config) =>
        new TypeOrmApiKeys(ds.getRepository(ApiKeyRecord), config.apiKeys, {
          seconds: config.apiKeyCacheSeconds,
          maxEntries: 10_000,
        }),
    },
    { provide: RateLimits, inject: [CONFIG], useFactory: rateLimitsFor },
    // Without CURSOR_SECRET, a secret kept in the database: a cursor is good on every instance and across restarts.
    {
      provide: CursorCodec,
      inject: [CONFIG, DATA_SOURCE],
      useFactory: async (config: Config, ds: DataSource) =>
        new CursorCodec(config.cursorSecret ?? (await sharedSecret(ds, 'cursor'))),
    },
    {
      provide: ReplicaStatus,
      inject: [TypeOrmReplicas],
      useFactory: (replicas: TypeOrmReplicas) => new ReplicaSetStatus(replicas.set),
    },
    {
      provide: HttpMetrics,
      inject: [DatabasePool, Readiness, ReplicaStatus],
      useFactory: (pool: DatabasePool, readiness: Readiness, replicas: ReplicaStatus) =>
        new HttpMetrics({ pool, readiness, replicas }),
    },
    ShutdownState,
    { provide: ListPets, inject: [PetRepository], useFactory: (pets: PetRepository) => new ListPets(pets) },
    {
      provide: CreatePet,
      inject: [PetRepository, IdempotencyStore],
      useFactory: (pets: PetRepository, store: IdempotencyStore) => new CreatePet(pets, store),
    },
    { provide: GetPet, inject: [PetRepository], useFactory: (pets: PetRepository) => new GetPet(pets) },
    { provide: APP_GUARD, useClass: BearerKeyGuard },
    { provide: APP_FILTER, useClass: ErrorFilter },
  ],
})
export class AppModule {}

async function databaseServerFor(config: Config): Promise<DatabaseServer> {
  const server = await openDatabaseServer(config);
  const logger = startupLogger(config.log);
  await waitForDatabase(server.url, config.databaseWaitSeconds, (line) => logger.warn({ context: 'Database' }, line));
  return server;
}

function replicasFor(ds: DataSource, config: Config, server: DatabaseServer): TypeOrmReplicas {
  const logger = new Logger('Replicas');
  const replicas = new TypeOrmReplicas(ds, config.databaseReplicaUrls, {
    maxLagSeconds: config.databaseReplicaMaxLagSeconds,
    schema: server.schema,
    log: (line) => logger.warn(line),
  });
  replicas.start();
  return replicas;
}

function rateLimitsFor(config: Config): RateLimits {
  if (config.rateLimit === null) return new NoRateLimits();
  if (config.redisUrl === null) return new FlexibleRateLimits(config.rateLimit, null);
  const redis = connectRedis(config.redisUrl);
  const logger = new Logger('Redis');
  redis.on('error', (error: Error) => logger.warn(`${error.message}; rate limits are counted per process meanwhile`));
  return new FlexibleRateLimits(config.rateLimit, redis);
}
