import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { AccessModule } from './access.module.js';
import { DatabaseModule } from './database.module.js';
import { HttpEdgeModule } from './http-edge.module.js';
import { ReadinessIndicators } from './interface/http/platform/health-indicators.js';
import { HealthController } from './interface/http/platform/health.controller.js';
import { PetsModule } from './pets.module.js';

/**
 * /healthz and /readyz, outside /v1 and without a key, as @nestjs/terminus health checks. Ready
 * reads the database and its replicas, the rate limits' store, the shutdown's state, and the
 * products' warm-up (the pets' first mark). Terminus logs nothing itself: a 503 is answered, and
 * an outage logged, by the error filter, as on every path.
 */
@Module({
  imports: [TerminusModule.forRoot({ logger: false }), DatabaseModule, AccessModule, HttpEdgeModule, PetsModule],
  controllers: [HealthController],
  providers: [ReadinessIndicators],
})
export class HealthModule {}
