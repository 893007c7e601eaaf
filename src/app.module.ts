import { Module } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { ScheduleModule } from '@nestjs/schedule';
import { AccessModule } from './access.module.js';
import { DatabaseModule } from './database.module.js';
import { HealthModule } from './health.module.js';
import { HttpEdgeModule } from './http-edge.module.js';
import { petstoreConfig, validateEnvironment } from './infrastructure/platform/config.js';
import { ObservabilityModule } from './observability.module.js';
import { PetsModule } from './pets.module.js';

/**
 * The service: the platform's parts (configuration, database, observability, the HTTP edge,
 * health, timers) and the products (access, pets), each a module binding its own ports.
 */
@Module({
  imports: [
    // .env is read by readEnvFile() (main.ts), not by ConfigModule: one reader for every entry point.
    ConfigModule.forRoot({
      isGlobal: true,
      ignoreEnvFile: true,
      validate: validateEnvironment,
      load: [petstoreConfig],
    }),
    // Timers (@Interval) run from start-up, and stop when the app closes.
    ScheduleModule.forRoot(),
    DatabaseModule,
    ObservabilityModule,
    HttpEdgeModule,
    HealthModule,
    AccessModule,
    PetsModule,
  ],
})
export class AppModule {}
