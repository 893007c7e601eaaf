import { Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { AccessModule } from './access.module.js';
import { DatabaseModule } from './database.module.js';
import { HealthModule } from './health.module.js';
import { HttpEdgeModule } from './http-edge.module.js';
import { ConfigurationModule } from './configuration.module.js';
import { ObservabilityModule } from './observability.module.js';
import { PetsModule } from './pets.module.js';

/**
 * The service: the platform's parts (configuration, database, observability, the HTTP edge,
 * health, timers) and the products (access, pets), each a module binding its own ports.
 */
@Module({
  imports: [
    ConfigurationModule,
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
