import { Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import pTimeout from 'p-timeout';
import { RateLimits } from '../../../application/platform/rate-limits.js';
import { Readiness } from '../../../application/platform/readiness.js';
import { ReplicaStatus } from '../../../application/platform/replica-status.js';
import { StoreUnavailableError } from '../../../application/platform/store-unavailable-error.js';
import { WarmUp } from '../../../application/platform/warm-up.js';
import { ShutdownState } from './shutdown-state.js';

/** How long /readyz waits for the warm-up (a first high-water mark) before it answers 503. */
const WARM_UP_WAIT_MS = 1000;

/**
 * What /readyz asks, one @nestjs/terminus health indicator each, in the order a failure is told:
 * down (not ready), degraded (ready, and says what it does without) or up. The `message` of a
 * down or degraded one is what the answer says (health.controller.ts).
 */
@Injectable()
export class ReadinessIndicators {
  constructor(
    private readonly health: HealthIndicatorService,
    private readonly shutdownState: ShutdownState,
    private readonly warmUps: WarmUp,
    private readonly readiness: Readiness,
    private readonly replicas: ReplicaStatus,
    private readonly rateLimitStore: RateLimits,
  ) {}

  /** Draining for shutdown: the balancer should take the instance out. */
  shutdown() {
    const indicator = this.health.check('shutdown');
    return this.shutdownState.draining ? indicator.down('The service is shutting down') : indicator.up();
  }

  /** The products' warm-up (the pets' first high-water mark): until it is done, tried once more here. */
  async warmUp() {
    const indicator = this.health.check('warm-up');
    if (this.warmUps.done()) return indicator.up();
    const read = this.warmUps.run().then(
      () => true,
      () => false,
    );
    return (await pTimeout(read, { milliseconds: WARM_UP_WAIT_MS, fallback: () => false }))
      ? indicator.up()
      : indicator.down('The service has not read the state of the pets yet');
  }

  /**
   * The primary answers; without it (a failover under way), an instance whose replica still serves
   * reads stays in the balancer: reads go on, creates answer 503 with Retry-After themselves. A
   * failure that is not an outage is thrown: a bug, answered 500.
   */
  async database() {
    const indicator = this.health.check('database');
    try {
      await this.readiness.check();
      return indicator.up();
    } catch (error) {
      if (!(error instanceof StoreUnavailableError)) throw error;
      if (!this.replicas.replicas().some((replica) => replica.usable)) return indicator.down(error.message);
      return indicator.degraded('the primary database does not answer: reads come from replicas, creates answer 503');
    }
  }

  /** The rate limits' store (Redis): without it, limits are counted per process. */
  async rateLimits() {
    const indicator = this.health.check('rate-limits');
    const degradation = await this.rateLimitStore.degradation();
    return degradation === null ? indicator.up() : indicator.degraded(degradation);
  }

  /** What the products do without while they serve (the high-water mark's readings not shared, ...). */
  products() {
    const indicator = this.health.check('products');
    const degradation = this.warmUps.degradation();
    return degradation === null ? indicator.up() : indicator.degraded(degradation);
  }
}
