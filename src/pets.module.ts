import { Logger, Module } from '@nestjs/common';
import { getDataSourceToken } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { CreatePet } from './application/pets/create-pet.js';
import { GetPet } from './application/pets/get-pet.js';
import { ListPets } from './application/pets/list-pets.js';
import { PetTransactions, SettledMarkEvents, SettledMarks } from './application/pets/ports.js';
import { WarmUp } from './application/platform/warm-up.js';
import { PetRepository } from './domain/pets/pet-repository.js';
import { DatabaseModule } from './database.module.js';
import { type Config, petstoreConfig } from './infrastructure/platform/config.js';
import { sharedSecret } from './infrastructure/platform/database/shared-secrets.js';
import { TypeOrmReplicas } from './infrastructure/platform/database/typeorm-replicas.js';
import { CLEANUP_BATCH_SIZE, IdempotencyKeysCleanup } from './infrastructure/pets/idempotency-keys-cleanup.js';
import {
  ReplicaRoutingPetRepository,
  TypeOrmReplicaPetRepository,
} from './infrastructure/pets/replica-pet-repository.js';
import { SettledMarkMetrics } from './infrastructure/pets/settled-mark-metrics.js';
import { TypeOrmPetRepository } from './infrastructure/pets/typeorm-pet-repository.js';
import { TypeOrmPetTransactions } from './infrastructure/pets/typeorm-pet-transactions.js';
import { openRedisLookBoard, RedisLookBoard } from './infrastructure/pets/redis-look-board.js';
import { TypeOrmSettledMarks } from './infrastructure/pets/typeorm-settled-marks.js';
import { CursorCodec } from './interface/http/pets/cursor.js';
import { PetsController } from './interface/http/pets/pets.controller.js';
import { HttpMetrics } from './interface/http/platform/metrics.js';
import { ObservabilityModule } from './observability.module.js';

const CONFIG = petstoreConfig.KEY;
const DATA_SOURCE = getDataSourceToken();

/**
 * The pets: the three routes, their use cases, and the ports those need bound to their adapters on
 * the platform's database. Exports the warm-up /readyz waits for: a first settled mark.
 */
@Module({
  imports: [DatabaseModule, ObservabilityModule],
  controllers: [PetsController],
  providers: [
    // The pets on the primary; reads may go to a replica.
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
    { provide: PetTransactions, inject: [DATA_SOURCE], useFactory: (ds: DataSource) => new TypeOrmPetTransactions(ds) },
    {
      provide: SettledMarkEvents,
      inject: [HttpMetrics],
      useFactory: (metrics: HttpMetrics) => new SettledMarkMetrics(metrics.registry),
    },
    // With REDIS_URL, the instances share the marks' looks on the primary through Redis.
    { provide: RedisLookBoard, inject: [CONFIG, DATA_SOURCE], useFactory: lookBoardFor },
    {
      provide: TypeOrmSettledMarks,
      inject: [DATA_SOURCE, SettledMarkEvents, RedisLookBoard],
      useFactory: settledMarksFor,
    },
    { provide: SettledMarks, useExisting: TypeOrmSettledMarks },
    // Ready once the instance holds a settled mark; degraded while the looks are not shared as configured.
    {
      provide: WarmUp,
      inject: [TypeOrmSettledMarks],
      useFactory: (marks: TypeOrmSettledMarks): WarmUp => ({
        done: () => marks.last() !== null,
        run: () => marks.fresh().then(() => undefined),
        degradation: () => marks.degradation(),
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
      useFactory: async (config: Config, ds: DataSource) =>
        new CursorCodec(config.cursorSecret ?? (await sharedSecret(ds, 'cursor'))),
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
  ],
  exports: [WarmUp],
})
export class PetsModule {}

/**
 * A first mark is read at start, so that the instance is ready (/readyz) and its first lists need
 * not wait for one. A failure is left to /readyz and the lists, which ask again.
 */
function settledMarksFor(ds: DataSource, events: SettledMarkEvents, board: RedisLookBoard | null): TypeOrmSettledMarks {
  const logger = new Logger('Pets');
  const marks = new TypeOrmSettledMarks(ds, { events, board, log: (line) => logger.warn(line) });
  marks.fresh().catch((error: unknown) => logger.warn(`No settled mark at start: ${String(error)}`));
  return marks;
}

/**
 * The board the instances on this database share their looks on: its namespace in Redis is a
 * secret kept in the database, so that instances of another database never share them. Closed
 * with the module.
 */
async function lookBoardFor(config: Config, ds: DataSource): Promise<RedisLookBoard | null> {
  if (config.redisUrl === null) return null;
  const logger = new Logger('Pets');
  return openRedisLookBoard(config.redisUrl, await sharedSecret(ds, 'settled-marks'), (line) => logger.warn(line));
}
