import { Controller, Get } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import pTimeout from 'p-timeout';
import { RateLimits } from '../../../application/platform/rate-limits.js';
import { Readiness } from '../../../application/platform/readiness.js';
import { ReplicaStatus } from '../../../application/platform/replica-status.js';
import { StoreUnavailableError } from '../../../application/platform/store-unavailable-error.js';
import { WarmUp } from '../../../application/platform/warm-up.js';
import { ApiError } from './api-error.js';
import { ShutdownState } from './shutdown-state.js';

/** How long /readyz waits for the warm-up (a first settled mark) before it answers 503. */
const WARM_UP_WAIT_MS = 1000;

/**
 * Outside /v1, no key. /healthz: the process is up. /readyz: the service should get traffic: it
 * is not draining for shutdown, it has warmed up (WarmUp: the pets' first settled mark), and the primary database answers, or a replica serves reads while it does not (else
 * 503 unavailable).
 */
@ApiExcludeController()
@Controller()
export class HealthController {
  constructor(
    private readonly readiness: Readiness,
    private readonly shutdown: ShutdownState,
    private readonly rateLimits: RateLimits,
    private readonly replicas: ReplicaStatus,
    private readonly warmUp: WarmUp,
  ) {}

  @Get('healthz')
  health(): { status: 'ok' } {
    return { status: 'ok' };
  }

  /** Degraded is still ready: the service answers, and says what it does without. */
  @Get('readyz')
  async ready(): Promise<{ status: 'ok'; degraded?: string[] }> {
    if (this.shutdown.draining) throw new ApiError(503, 'The service is shutting down', { 'Retry-After': '1' });
    if (!this.warmUp.done()) await this.warmUpOnce();
    const degraded: string[] = [];
    try {
      await this.readiness.check();
    } catch (error) {
      // Without its primary (a failover under way), an instance whose replica still serves reads
      // stays in the balancer: reads go on, creates answer 503 with Retry-After themselves.
      if (!(error instanceof StoreUnavailableError) || !this.replicas.replicas().some((replica) => replica.usable))
        throw error;
      degraded.push('the primary database does not answer: reads come from replicas, creates answer 503');
    }
    const rateLimits = await this.rateLimits.degradation();
    if (rateLimits !== null) degraded.push(rateLimits);
    const products = this.warmUp.degradation();
    if (products !== null) degraded.push(products);
    return degraded.length === 0 ? { status: 'ok' } : { status: 'ok', degraded };
  }

  /** The instance warms up at start; until it has, /readyz tries once more itself. */
  private async warmUpOnce(): Promise<void> {
    const noMark = () =>
      new ApiError(503, 'The service has not read the state of the pets yet', { 'Retry-After': '1' });
    const read = this.warmUp.run().then(
      () => true,
      () => false,
    );
    if (!(await pTimeout(read, { milliseconds: WARM_UP_WAIT_MS, fallback: () => false }))) throw noMark();
  }
}
