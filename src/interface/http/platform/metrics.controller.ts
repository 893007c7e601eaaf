import { Controller, Get, Header } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { HttpMetrics } from './metrics.js';

/**
 * GET /metrics, outside /v1 and without a key, like the health checks: Prometheus scrapes it
 * without credentials, and it carries only counts and timings (no ids, keys or paths). Block it
 * at the edge if the port is public.
 */
@ApiExcludeController()
@Controller()
export class MetricsController {
  constructor(private readonly metrics: HttpMetrics) {}

  @Get('metrics')
  @Header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
  async scrape(): Promise<string> {
    return this.metrics.registry.metrics();
  }
}
