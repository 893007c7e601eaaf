import { Logger, Module } from '@nestjs/common';
import { getDataSourceToken } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { CreatePet } from './application/pets/create-pet.js';
import { GetPet } from './application/pets/get-pet.js';
import { ListPets } from './application/pets/list-pets.js';
import { HighWaterMarkEvents, HighWaterMarks, PetTransactions } from './application/pets/ports.js';
import { WarmUp } from './application/platform/warm-up.js';
import { PetRepository } from './domain/pets/pet-repository.js';
import { DatabaseModule } from './database.module.js';
import { type Config, petstoreConfig } from './infrastructure/platform/config.js';
import { sharedSecret } from './infrastructure/platform/database/shared-secrets.js';
import { TypeOrmReplicas } from './infrastructure/platform/database/typeorm-replicas.js';
import { SYSTEM_CLOCK } from './infrastructure/pets/clock.js';
import { HighWaterMarkMetrics } from './infrastructure/pets/high-water-mark-metrics.js';
import { SharedHighWaterMarks } from './infrastructure/pets/high-water-marks.js';
import { CLEANUP_BATCH_SIZE, IdempotencyKeysCleanup } from './infrastructure/pets/idempotency-keys-cleanup.js';
import { RedisReadingQueue, redisReadingQueueConnections } from './infrastructure/pets/redis-reading-queue.js';
import {
  ReplicaRoutingPetRepository,
  TypeOrmReplicaPetRepository,
} from './infrastructure/pets/replica-pet-repository.js';
import { SHARED_READING_OPTIONS, SharedReadings } from './infrastructure/pets/shared-readings.js';
import { TypeOrmIdempotencyKeys } from './infrastructure/pets/typeorm-idempotency-keys.js';
import { MARK_OPTIONS, TypeOrmHighWaterMarkReading } from './infrastructure/pets/typeorm-high-water-mark-reading.js';
import { TypeOrmPetRepository } from './infrastructure/pets/typeorm-pet-repository.js';
import { TypeOrmPetTransactions } from './infrastructure/pets/typeorm-pet-transactions.js';
import { CursorCodec } from './interface/http/pets/cursor.js';
import { PetsController } from './interface/http/pets/pets.controller.js';
import { HttpMetrics } from './interface/http/platform/metrics.js';
import { ObservabilityModule } from './observability.module.js';

const CONFIG = petstoreConfig.KEY;
const DATA_SOURCE = getDataSourceToken();

/**
 * The pets: the three routes, their use cases, and the ports those need bound to their adapters on
 * the platform's database. No factory here starts work of its own: the first high-water mark and
 * the reading queue's connections come in their classes' lifecycle hooks; the cursor secret is an
 * async provider, awaited before the app takes requests.
 * Exports the warm-up /readyz waits for: a first high-water mark.
 */
@Module({
  imports: [DatabaseModule, ObservabilityModule],
  controllers: [PetsController],
  providers: [
    // The pets on the primary, on the pool or on one transaction's connection; reads may go to a replica.
    {
      provide: PetRepository,
      inject: [DATA_SOURCE, TypeOrmReplicas],
      useFactory: (ds: DataSource, replicas: TypeOrmReplicas) => {
        const primary = new TypeOrmPetRepository(ds.manager);
        if (replicas.none) return primary;
        return new ReplicaRoutingPetRepository(
          primary,
          replicas.set,
          (replica) => new TypeOrmReplicaPetRepository(replica),
        );
      },
    },
    {
      provide: PetTransactions,
      inject: [DATA_SOURCE],
      useFactory: (ds: DataSource) =>
        new TypeOrmPetTransactions(ds, {
          pets: (manager: EntityManager) => new TypeOrmPetRepository(manager),
          keys: (manager: EntityManager) => new TypeOrmIdempotencyKeys(manager),
        }),
    },
    {
      provide: HighWaterMarkEvents,
      inject: [HttpMetrics],
      useFactory: (metrics: HttpMetrics) => new HighWaterMarkMetrics(metrics.registry),
    },
    // With REDIS_URL, the instances share the high-water mark's readings through Redis.
    {
      provide: RedisReadingQueue,
      inject: [CONFIG, DATA_SOURCE],
      useFactory: (config: Config, ds: DataSource): RedisReadingQueue | null => {
        const { redisUrl } = config;
        if (redisUrl === null) return null;
        // The namespace of its keys is a secret kept in the database: instances of another database never share them.
        const connect = async () => redisReadingQueueConnections(redisUrl, await sharedSecret(ds, 'high-water-marks'));
        return new RedisReadingQueue(connect, undefined, (line) => new Logger('Pets').warn(line));
      },
    },
    {
      provide: TypeOrmHighWaterMarkReading,
      inject: [DATA_SOURCE],
      useFactory: (ds: DataSource) => new TypeOrmHighWaterMarkReading(ds, (line) => new Logger('Pets').warn(line)),
    },
    {
      provide: SharedReadings,
      inject: [RedisReadingQueue, TypeOrmHighWaterMarkReading],
      useFactory: (queue: RedisReadingQueue | null, reading: TypeOrmHighWaterMarkReading): SharedReadings | null =>
        queue === null
          ? null
          : new SharedReadings(queue, reading.read, SHARED_READING_OPTIONS, SYSTEM_CLOCK, (line) =>
              new Logger('Pets').warn(line),
            ),
    },
    // SharedHighWaterMarks reads the first mark in its onApplicationBootstrap.
    {
      provide: SharedHighWaterMarks,
      inject: [TypeOrmHighWaterMarkReading, SharedReadings, HighWaterMarkEvents],
      useFactory: (
        reading: TypeOrmHighWaterMarkReading,
        shared: SharedReadings | null,
        events: HighWaterMarkEvents,
      ) => {
        const marks = new SharedHighWaterMarks(
          shared?.read ?? reading.read,
          MARK_OPTIONS,
          SYSTEM_CLOCK,
          events,
          (line) => new Logger('Pets').warn(line),
        );
        shared?.onReading((heard) => marks.heard(heard));
        return marks;
      },
    },
    { provide: HighWaterMarks, useExisting: SharedHighWaterMarks },
    // Ready once the instance holds a high-water mark; degraded while the readings are not shared as configured.
    {
      provide: WarmUp,
      inject: [SharedHighWaterMarks, SharedReadings],
      useFactory: (marks: SharedHighWaterMarks, shared: SharedReadings | null): WarmUp => ({
        done: () => marks.last() !== null,
        run: () => marks.fresh().then(() => undefined),
        degradation: () => shared?.degradation() ?? null,
      }),
    },
    {
      provide: IdempotencyKeysCleanup,
      inject: [DATA_SOURCE],
      useFactory: (ds: DataSource) => {
        const logger = new Logger('Idempotency');
        return new IdempotencyKeysCleanup(ds, { batchSize: CLEANUP_BATCH_SIZE, log: (line) => logger.warn(line) });
      },
    },
    // Without CURSOR_SECRET, a secret kept in the database: a cursor is good on every instance and across restarts.
    {
      provide: CursorCodec,
      inject: [CONFIG, DATA_SOURCE],
      // An async provider, Nest's own form: the app takes no request before the secret is read.
      useFactory: async (config: Config, ds: DataSource) =>
        new CursorCodec(config.cursorSecret ?? (await sharedSecret(ds, 'cursor'))),
    },
    {
      provide: ListPets,
      inject: [PetRepository, HighWaterMarks],
      useFactory: (pets: PetRepository, marks: HighWaterMarks) => new ListPets(pets, marks),
    },
    {
      provide: CreatePet,
      inject: [PetRepository, PetTransactions],
      useFactory: (pets: PetRepository, transactions: PetTransactions) => new CreatePet(pets, transactions),
    },
    { provide: GetPet, inject: [PetRepository], useFactory: (pets: PetRepository) => new GetPet(pets) },
  ],
  exports: [WarmUp],
})
export class PetsModule {}
