import { Controller, Get } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { RateLimits } from '../rate-limits/rate-limits.js';
import { Readiness } from '../database/readiness.js';
import { ApiError } from '../http/api-error.js';
import { Public } from '../http/public.js';
import { ShutdownState } from '../process/shutdown-state.js';

/**
 * Outside /v1, no key. /healthz: the process is up. /readyz: the service should get traffic: the
 * database answers and it is not draining for shutdown (else 503 unavailable).
 */
@Public()
@ApiExcludeController()
@Controller()
export class HealthController {
  constructor(
    private readonly readiness: Readiness,
    private readonly shutdown: ShutdownState,
    private readonly rateLimits: RateLimits,
  ) {}

  @Get('healthz')
  health(): { status: 'ok' } {
    return { status: 'ok' };
  }

  /** Degraded is still ready: the service answers, and says what it does without. */
  @Get('readyz')
  async ready(): Promise<{ status: 'ok'; degraded?: string[] }> {
    if (this.shutdown.draining) throw new ApiError(503, 'The service is shutting down', { 'Retry-After': '1' });
    await this.readiness.check();
    const rateLimits = await this.rateLimits.degradation();
    return rateLimits === null ? { status: 'ok' } : { status: 'ok', degraded: [rateLimits] };
  }
}
