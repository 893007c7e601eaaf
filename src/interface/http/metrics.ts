import { Controller, Get, Header } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { ApiExcludeController } from '@nestjs/swagger';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { DatabasePool } from '../../application/database-pool.js';
import { Public } from './bearer-key.guard.js';

/**
 * The service's Prometheus metrics, in a registry of its own (not prom-client's global one, so
 * that several apps in one process, as in the tests, do not collide).
 */
export class HttpMetrics {
  readonly registry = new Registry();
  private readonly requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by method, route and status.',
    labelNames: ['method', 'route', 'status'],
    registers: [this.registry],
  });
  private readonly duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from request to the end of the response, by method, route and status.',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  constructor(pool: DatabasePool) {
    collectDefaultMetrics({ register: this.registry });
    new Gauge({
      name: 'db_pool_connections',
      help: 'Connections of the PostgreSQL pool, by state (total, idle, waiting clients).',
      labelNames: ['state'],
      registers: [this.registry],
      collect() {
        const usage = pool.usage();
        this.set({ state: 'total' }, usage.total);
        this.set({ state: 'idle' }, usage.idle);
        this.set({ state: 'waiting' }, usage.waiting);
      },
    });
  }

  /** `route` is the route pattern (/v1/pets/:petId), never the raw path, so label values stay few. */
  observe(method: string, route: string, status: number, seconds: number): void {
    const labels = { method, route, status: String(status) };
    this.requests.inc(labels);
    this.duration.observe(labels, seconds);
  }
}

/** Observes every request, whatever answers it (a route, the guard, a 404 outside /v1). */
export function observeRequests(metrics: HttpMetrics) {
  return (request: Request, response: Response, next: NextFunction): void => {
    const started = process.hrtime.bigint();
    response.once('close', () => {
      // 499: the client went away before the answer was complete (nginx's convention).
      const status = response.writableFinished ? response.statusCode : 499;
      metrics.observe(request.method, routeOf(request), status, Number(process.hrtime.bigint() - started) / 1e9);
    });
    next();
  };
}

/**
 * The route pattern that answered (`/v1/pets/:petId`), never the raw path with its ids and query;
 * `unmatched` for paths no route of ours matched (Nest's catch-all included), so values stay few.
 */
export function routeOf(request: object): string {
  const route: unknown = Reflect.get(request, 'route');
  const baseUrl: unknown = Reflect.get(request, 'baseUrl');
  const path = typeof route === 'object' && route !== null && 'path' in route ? route.path : null;
  return typeof path === 'string' && !path.includes('*')
    ? `${typeof baseUrl === 'string' ? baseUrl : ''}${path}`
    : 'unmatched';
}

/**
 * GET /metrics, outside /v1 and without a key, like the health checks: Prometheus scrapes it
 * without credentials, and it carries only counts and timings (no ids, keys or paths). Block it
 * at the edge if the port is public.
 */
@Public()
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
