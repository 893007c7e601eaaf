import { Module } from '@nestjs/common';
import { AccessModule } from './access.module.js';
import { DatabaseModule } from './database.module.js';
import { HttpEdgeModule } from './http-edge.module.js';
import { HealthController } from './interface/http/platform/health.controller.js';
import { PetsModule } from './pets.module.js';

/**
 * /healthz and /readyz, outside /v1 and without a key. Ready reads the database and its replicas,
 * the rate limits' store, the shutdown's state, and the products' warm-up (the pets' first mark).
 */
@Module({
  imports: [DatabaseModule, AccessModule, HttpEdgeModule, PetsModule],
  controllers: [HealthController],
})
export class HealthModule {}
