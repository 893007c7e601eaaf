import { Module } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import { DatabasePool } from './application/platform/database-pool.js';
import { Readiness } from './application/platform/readiness.js';
import { ReplicaStatus } from './application/platform/replica-status.js';
import { DatabaseModule } from './database.module.js';
import { type Config, petstoreConfig } from './infrastructure/platform/config.js';
import { loggerParams } from './interface/http/platform/logging.js';
import { HttpMetrics } from './interface/http/platform/metrics.js';
import { MetricsController } from './interface/http/platform/metrics.controller.js';
import { RefusedRequestsLog } from './interface/http/platform/refused-requests-log.js';

/**
 * What operators read: the request log (nestjs-pino, and the refused requests counted per client
 * address) and the Prometheus metrics at /metrics, whose registry the products add their own
 * metrics to (HttpMetrics.registry).
 */
@Module({
  imports: [
    LoggerModule.forRootAsync({
      inject: [petstoreConfig.KEY],
      useFactory: (config: Config) => loggerParams(config.log),
    }),
    DatabaseModule,
  ],
  controllers: [MetricsController],
  providers: [
    {
      provide: HttpMetrics,
      inject: [DatabasePool, Readiness, ReplicaStatus],
      useFactory: (pool: DatabasePool, readiness: Readiness, replicas: ReplicaStatus) =>
        new HttpMetrics({ pool, readiness, replicas }),
    },
    RefusedRequestsLog,
  ],
  // What PetsModule injects (its metrics join the registry). app.ts takes RefusedRequestsLog from the app.
  exports: [HttpMetrics],
})
export class ObservabilityModule {}
