import { type DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import { DataSource } from 'typeorm';
import { ApiKeys } from './application/api-keys.js';
import { CreatePet } from './application/create-pet.js';
import { DatabasePool } from './application/database-pool.js';
import { IdempotencyStore } from './application/idempotency-store.js';
import { GetPet } from './application/get-pet.js';
import { ListPets } from './application/list-pets.js';
import { RateLimits } from './application/rate-limits.js';
import { Readiness } from './application/readiness.js';
import { PetRepository } from './domain/pet-repository.js';
import { DatabaseReadiness, TypeOrmDatabasePool } from './infrastructure/database.js';
import { type ApiKeyCacheOptions, DEFAULT_API_KEY_CACHE, TypeOrmApiKeys } from './infrastructure/typeorm-api-keys.js';
import { TypeOrmIdempotencyStore } from './infrastructure/typeorm-idempotency-store.js';
import { TypeOrmPetRepository } from './infrastructure/typeorm-pet-repository.js';
import { BearerKeyGuard } from './interface/http/bearer-key.guard.js';
import { CursorCodec } from './interface/http/cursor.js';
import { ErrorFilter } from './interface/http/error.filter.js';
import { HealthController } from './interface/http/health.controller.js';
import { HttpMetrics, MetricsController } from './interface/http/metrics.js';
import { IdempotentResponses } from './interface/http/idempotent-responses.js';
import { ShutdownState } from './interface/http/shutdown-state.js';
import { PetsController } from './interface/http/pets.controller.js';

export type AppOptions = {
  dataSource: DataSource;
  /** Keys from API_KEYS, accepted besides the stored ones. */
  environmentKeys: string[];
  apiKeyCache?: ApiKeyCacheOptions;
  rateLimits: RateLimits;
  cursorSecret: string;
};

/** The composition root: every port bound to its adapter, every use case built by hand, here and only here. */
@Module({})
export class AppModule {
  static forRoot({ dataSource, environmentKeys, apiKeyCache, rateLimits, cursorSecret }: AppOptions): DynamicModule {
    return {
      module: AppModule,
      controllers: [PetsController, HealthController, MetricsController],
      providers: [
        { provide: DataSource, useValue: dataSource },
        { provide: PetRepository, useFactory: (ds: DataSource) => new TypeOrmPetRepository(ds), inject: [DataSource] },
        { provide: IdempotencyStore, useFactory: (ds: DataSource) => new TypeOrmIdempotencyStore(ds), inject: [DataSource] },
        { provide: DatabasePool, useFactory: (ds: DataSource) => new TypeOrmDatabasePool(ds), inject: [DataSource] },
        { provide: HttpMetrics, useFactory: (pool: DatabasePool) => new HttpMetrics(pool), inject: [DatabasePool] },
        { provide: ShutdownState, useValue: new ShutdownState() },
        { provide: Readiness, useFactory: (ds: DataSource) => new DatabaseReadiness(ds), inject: [DataSource] },
        { provide: ApiKeys, useValue: new TypeOrmApiKeys(dataSource, environmentKeys, apiKeyCache ?? DEFAULT_API_KEY_CACHE) },
        { provide: RateLimits, useValue: rateLimits },
        { provide: CursorCodec, useValue: new CursorCodec(cursorSecret) },
        { provide: ListPets, useFactory: (pets: PetRepository) => new ListPets(pets), inject: [PetRepository] },
        { provide: CreatePet, useFactory: (pets: PetRepository) => new CreatePet(pets), inject: [PetRepository] },
        { provide: GetPet, useFactory: (pets: PetRepository) => new GetPet(pets), inject: [PetRepository] },
        IdempotentResponses,
        { provide: APP_GUARD, useClass: BearerKeyGuard },
        { provide: APP_FILTER, useClass: ErrorFilter },
      ],
    };
  }
}
