import { type ArgumentsHost, Catch, Controller, type ExceptionFilter, Get, UseFilters } from '@nestjs/common';
import { ServiceUnavailableException } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { HealthCheckService, type HealthCheckResult } from '@nestjs/terminus';
import type { Request, Response } from 'express';
import { StoreUnavailableError } from '../../../application/platform/store-unavailable-error.js';
import { ApiError } from './api-error.js';
import { answerWithError } from './error.filter.js';
import { ReadinessIndicators } from './health-indicators.js';

export type HealthBody = { status: 'ok'; degraded?: string[] };

/**
 * The bodies docs/api.md documents, from what @nestjs/terminus found: `{"status":"ok"}`, with
 * `degraded` listing what a degraded indicator says. Terminus's own body (info, error, details)
 * is not the contract.
 */
export function healthBody(result: HealthCheckResult): HealthBody {
  const degraded = Object.values(result.details)
    .filter((detail) => detail.status === 'degraded')
    .map((detail) => String(detail.message));
  return degraded.length === 0 ? { status: 'ok' } : { status: 'ok', degraded };
}

/**
 * Terminus's 503 (ServiceUnavailableException holding its result) as the Error body: the first
 * indicator down says why. The database's is the outage every store answers with (503,
 * Retry-After 5, a warning logged); the others ask for a retry in a second.
 */
export function notReadyAnswer(exception: ServiceUnavailableException): ApiError | StoreUnavailableError {
  const [key, detail] = Object.entries(propertyOf(exception.getResponse(), 'error') ?? {})[0] ?? [];
  if (key === 'database') return new StoreUnavailableError();
  const message = propertyOf(detail, 'message');
  return new ApiError(503, typeof message === 'string' ? message : 'The service is shutting down', {
    'Retry-After': '1',
  });
}

function propertyOf(value: unknown, name: string): unknown {
  return typeof value === 'object' && value !== null && name in value ? Reflect.get(value, name) : undefined;
}

@Catch(ServiceUnavailableException)
export class NotReadyFilter implements ExceptionFilter {
  catch(exception: ServiceUnavailableException, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    answerWithError(notReadyAnswer(exception), http.getRequest<Request>(), http.getResponse<Response>());
  }
}

/**
 * Outside /v1, no key. /healthz: the process is up. /readyz: the service should get traffic: it is
 * not draining for shutdown, it has warmed up, and the primary database answers, or a replica
 * serves reads while it does not (ReadinessIndicators); else 503 unavailable.
 */
@ApiExcludeController()
@Controller()
@UseFilters(NotReadyFilter)
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: ReadinessIndicators,
  ) {}

  @Get('healthz')
  async live(): Promise<HealthBody> {
    return healthBody(await this.health.check([]));
  }

  /** Degraded is still ready: the service answers, and says what it does without. */
  @Get('readyz')
  async ready(): Promise<HealthBody> {
    const { indicators } = this;
    const result = await this.health.check([
      () => indicators.shutdown(),
      () => indicators.warmUp(),
      () => indicators.database(),
      () => indicators.rateLimits(),
      () => indicators.products(),
    ]);
    return healthBody(result);
  }
}
