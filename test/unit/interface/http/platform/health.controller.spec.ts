import { jest } from '@jest/globals';
import { Readiness } from '../../../../../src/application/platform/readiness.js';
import { type ReplicaState, ReplicaStatus } from '../../../../../src/application/platform/replica-status.js';
import { StoreUnavailableError } from '../../../../../src/application/platform/store-unavailable-error.js';
import { HealthController } from '../../../../../src/interface/http/platform/health.controller.js';
import { NoRateLimits } from '../../../../../src/infrastructure/platform/rate-limits/flexible-rate-limits.js';
import { WarmUp } from '../../../../../src/application/platform/warm-up.js';
import { ShutdownState } from '../../../../../src/interface/http/platform/shutdown-state.js';

/** A primary the test turns off, or breaks with another error than an outage. */
class SwitchablePrimary extends Readiness {
  failure: Error | null = null;
  check(): Promise<void> {
    return this.failure === null ? Promise.resolve() : Promise.reject(this.failure);
  }
}

class Replicas extends ReplicaStatus {
  states: ReplicaState[] = [];
  replicas(): ReplicaState[] {
    return this.states;
  }
  maxLagMs(): number {
    return 2000;
  }
}

/** A warm-up as the test sets it: done or not, and a try that succeeds or never ends. */
class Marks extends WarmUp {
  held = true;
  answers = false;
  done(): boolean {
    return this.held;
  }
  run(): Promise<void> {
    if (!this.answers) return new Promise(() => undefined);
    this.held = true;
    return Promise.resolve();
  }
  degraded: string | null = null;
  degradation(): string | null {
    return this.degraded;
  }
}

function setUp() {
  const primary = new SwitchablePrimary();
  const replicas = new Replicas();
  const shutdown = new ShutdownState();
  const marks = new Marks();
  return {
    primary,
    replicas,
    shutdown,
    marks,
    health: new HealthController(primary, shutdown, new NoRateLimits(), replicas, marks),
  };
}

const replica = (usable: boolean): ReplicaState => ({ name: 'replica-1:5432', usable, lagMs: usable ? 10 : Infinity });

describe('HealthController.ready', () => {
  it('is ready while the primary answers', async () => {
    const { health } = setUp();

    await expect(health.ready()).resolves.toEqual({ status: 'ok' });
  });

  it('is not ready without the primary when no replica serves reads', async () => {
    const { health, primary, replicas } = setUp();
    primary.failure = new StoreUnavailableError();
    replicas.states = [replica(false)];

    await expect(health.ready()).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it('stays ready without the primary while a replica serves reads, and says that creates fail', async () => {
    const { health, primary, replicas } = setUp();
    primary.failure = new StoreUnavailableError();
    replicas.states = [replica(false), replica(true)];

    await expect(health.ready()).resolves.toEqual({
      status: 'ok',
      degraded: [expect.stringMatching(/primary database does not answer.*creates answer 503/)],
    });
  });

  it('lets a failure that is not an outage through, replicas or not', async () => {
    const { health, primary, replicas } = setUp();
    const bug = new Error('a bug');
    primary.failure = bug;
    replicas.states = [replica(true)];

    await expect(health.ready()).rejects.toBe(bug);
  });

  it('is not ready while draining, whatever the database says', async () => {
    const { health, shutdown } = setUp();
    shutdown.draining = true;

    await expect(health.ready()).rejects.toMatchObject({ status: 503 });
  });

  it('is not ready before it holds a settled mark, and a mark that comes late does not hang the check', async () => {
    const { health, marks } = setUp();
    marks.held = false;
    jest.useFakeTimers();
    try {
      const ready = health.ready();
      const outcome = expect(ready).rejects.toMatchObject({ status: 503, headers: { 'Retry-After': '1' } });
      await jest.advanceTimersByTimeAsync(1000);

      await outcome;
    } finally {
      jest.useRealTimers();
    }
  });

  it('stays ready while the pets do without something, and says what', async () => {
    const { health, marks } = setUp();
    marks.degraded = 'Redis does not answer: each instance reads its own settled marks';

    await expect(health.ready()).resolves.toEqual({
      status: 'ok',
      degraded: ['Redis does not answer: each instance reads its own settled marks'],
    });
  });

  it('reads a first settled mark itself, and is ready once it holds one', async () => {
    const { health, marks } = setUp();
    marks.held = false;
    marks.answers = true;

    await expect(health.ready()).resolves.toEqual({ status: 'ok' });
    expect(marks.done()).toBe(true);
  });
});
