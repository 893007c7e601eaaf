import { Logger, Module } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { LoggerModule } from 'nestjs-pino';
import type { DataSource } from 'typeorm';
import { ApiKeys } from './application/access/api-keys.js';
import { CreatePet, PetTransactions } from './application/pets/create-pet.js';
import { DatabasePool } from './application/platform/database-pool.js';
import { GetPet } from './application/pets/get-pet.js';
import { ListPets } from './application/pets/list-pets.js';
import { RateLimits } from './application/platform/rate-limits.js';
import { Readiness } from './application/platform/readiness.js';
import { ReplicaStatus } from './application/platform/replica-status.js';
import { WarmUp } from './application/platform/warm-up.js';
import { type Config, petstoreConfig } from './infrastructure/platform/config.js';
import { PetRepository, SettledMarks } from './domain/pets/pet-repository.js';
import { DatabaseReadiness } from './infrastructure/platform/database/database-readiness.js';
import { DatabaseServer, openDatabaseServer } from './infrastructure/platform/database/database-server.js';
import { openDataSource } from './infrastructure/platform/database/database.js';
import { dataSourceOptions } from './infrastructure/schema/data-source-options.js';
import { sharedSecret } from './infrastructure/platform/database/shared-secrets.js';
import { TypeOrmDatabasePool } from './infrastructure/platform/database/typeorm-database-pool.js';
import { waitForDatabase } from './infrastructure/platform/database/wait-for-database.js';
import {
  connectRedis,
  FlexibleRateLimits,
  NoRateLimits,
} from './infrastructure/platform/rate-limits/flexible-rate-limits.js';
import { ApiKeyRecord } from './infrastructure/access/api-key.record.js';
import { TypeOrmApiKeys } from './infrastructure/access/typeorm-api-keys.js';
import { CLEANUP_DEFAULTS, IdempotencyKeysCleanup } from './infrastructure/pets/idempotency-keys-cleanup.js';
import { ReplicaRoutingPetRepository } from './infrastructure/pets/replica-pet-repository.js';
import { TypeOrmPetRepository } from './infrastructure/pets/typeorm-pet-repository.js';
import { TypeOrmPetTransactions } from './infrastructure/pets/typeorm-pet-transactions.js';
import { TypeOrmReplicaPetRepository } from './infrastructure/pets/replica-pet-repository.js';
import { MARK_OPTIONS, TypeOrmSettledMarks } from './infrastructure/pets/typeorm-settled-marks.js';
import { ReplicaSetStatus } from './infrastructure/platform/database/replica-set-status.js';
import { TypeOrmReplicas } from './infrastructure/platform/database/typeorm-replicas.js';
import { BearerKeyGuard } from './interface/http/access/bearer-key.guard.js';
import { CursorCodec } from './interface/http/pets/cursor.js';
import { ErrorFilter } from './interface/http/platform/error.filter.js';
import { HealthController } from './interface/http/platform/health.controller.js';
import { loggerParams, startupLogger } from './interface/http/platform/logging.js';
import { HttpMetrics, MetricsController } from './interface/http/platform/metrics.js';
import { PetsController } from './interface/http/pets/pets.controller.js';
import { BodyValidationPipe } from './interface/http/pets/body-validation.pipe.js';
import { ShutdownState } from './interface/http/platform/shutdown-state.js';

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
    // .env is read by readEnvFile() (main.ts), not by ConfigModule: one reader for every entry point.
    ConfigModule.forRoot({ isGlobal: true, ignoreEnvFile: true, load: [petstoreConfig] }),
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
    // The pets on the primary; reads may go to a replica.
    {
      provide: PetRepository,
      inject: [DATA_SOURCE, TypeOrmReplicas],
      useFactory: (ds: DataSource, replicas: TypeOrmReplicas<PetRepository>) => {
        const primary = new TypeOrmPetRepository(ds.manager);
        return replicas.none ? primary : new ReplicaRoutingPetRepository(primary, replicas.set);
      },
    },
    { provide: PetTransactions, inject: [DATA_SOURCE], useFactory: (ds: DataSource) => new TypeOrmPetTransactions(ds) },
    { provide: IdempotencyKeysCleanup, inject: [DATA_SOURCE], useFactory: idempotencyKeysCleanupFor },
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
      useFactory: (replicas: TypeOrmReplicas<PetRepository>) => new ReplicaSetStatus(replicas.set),
    },
    {
      provide: HttpMetrics,
      inject: [DatabasePool, Readiness, ReplicaStatus],
      useFactory: (pool: DatabasePool, readiness: Readiness, replicas: ReplicaStatus) =>
        new HttpMetrics({ pool, readiness, replicas }),
    },
    ShutdownState,
    { provide: SettledMarks, inject: [DATA_SOURCE, HttpMetrics], useFactory: settledMarksFor },
    // Ready once the instance holds a settled mark.
    {
      provide: WarmUp,
      inject: [SettledMarks],
      useFactory: (marks: SettledMarks): WarmUp => ({
        done: () => marks.last() !== null,
        run: () => marks.fresh().then(() => undefined),
      }),
    },
    {
      provide: ListPets,
      inject: [PetRepository, SettledMarks],
      useFactory: (pets: PetRepository, settled: SettledMarks) => new ListPets(pets, settled),
    },
    {
      provide: CreatePet,
      inject: [PetRepository, PetTransactions],
      useFactory: (pets: PetRepository, transactions: PetTransactions) => new CreatePet(pets, transactions),
    },
    { provide: GetPet, inject: [PetRepository], useFactory: (pets: PetRepository) => new GetPet(pets) },
    { provide: APP_GUARD, useClass: BearerKeyGuard },
    { provide: APP_FILTER, useClass: ErrorFilter },
    { provide: APP_PIPE, useClass: BodyValidationPipe },
  ],
})
export class AppModule {}

async function databaseServerFor(config: Config): Promise<DatabaseServer> {
  const server = await openDatabaseServer(config);
  const logger = startupLogger(config.log);
  await waitForDatabase(server.url, config.databaseWaitSeconds, (line) => logger.warn({ context: 'Database' }, line));
  return server;
}

function replicasFor(ds: DataSource, config: Config, server: DatabaseServer): TypeOrmReplicas<PetRepository> {
  const logger = new Logger('Replicas');
  const replicas = new TypeOrmReplicas(ds, config.databaseReplicaUrls, {
    maxLagSeconds: config.databaseReplicaMaxLagSeconds,
    optionsFor: (url, waits) => dataSourceOptions(url, server.schema, waits),
    readsOn: (replica) => new TypeOrmReplicaPetRepository(replica),
    log: (line) => logger.warn(line),
  });
  replicas.start();
  return replicas;
}

/**
 * A first mark is read at start, so that the instance is ready (/readyz) and its first lists need
 * not wait for one. A failure is left to /readyz and the lists, which ask again.
 */
function settledMarksFor(ds: DataSource, metrics: HttpMetrics): SettledMarks {
  const marks = new TypeOrmSettledMarks(ds, MARK_OPTIONS, metrics.marks);
  marks.fresh().catch((error: unknown) => new Logger('Pets').warn(`No settled mark at start: ${String(error)}`));
  return marks;
}

/** Started here; Nest stops it (onModuleDestroy) when the app closes. */
function idempotencyKeysCleanupFor(ds: DataSource): IdempotencyKeysCleanup {
  const logger = new Logger('Idempotency');
  const cleanup = new IdempotencyKeysCleanup(ds, { ...CLEANUP_DEFAULTS, log: (line) => logger.warn(line) });
  cleanup.start();
  return cleanup;
}

function rateLimitsFor(config: Config): RateLimits {
  if (config.rateLimit === null) return new NoRateLimits();
  if (config.redisUrl === null) return new FlexibleRateLimits(config.rateLimit, null);
  const redis = connectRedis(config.redisUrl);
  const logger = new Logger('Redis');
  redis.on('error', (error: Error) => logger.warn(`${error.message}; rate limits are counted per process meanwhile`));
  return new FlexibleRateLimits(config.rateLimit, redis);
}
