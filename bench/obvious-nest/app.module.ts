import { Module } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { APP_GUARD } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ApiKeyGuard } from './api-key.guard.js';
import { HealthController } from './health.controller.js';
import { Pet } from './pet.entity.js';
import { PetsController } from './pets.controller.js';
import { PetsService } from './pets.service.js';

@Module({
  imports: [
    ConfigModule.forRoot(),
    TypeOrmModule.forRoot({
      type: 'postgres',
      url: process.env.DATABASE_URL,
      entities: [Pet],
      // The ids are bigint; the API's are JSON numbers.
      parseInt8: true,
    }),
    TypeOrmModule.forFeature([Pet]),
  ],
  controllers: [HealthController, PetsController],
  providers: [PetsService, { provide: APP_GUARD, useClass: ApiKeyGuard }],
})
export class AppModule {}
