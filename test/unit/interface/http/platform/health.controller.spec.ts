import { jest } from '@jest/globals';
import { Readiness } from '../../../../../src/application/platform/readiness.js';
import { type ReplicaState, ReplicaStatus } from '../../../../../src/application/platform/replica-status.js';
import { StoreUnavailableError } from '../../../../../src/application/platform/store-unavailable-error.js';
import { Test } from '@nestjs/testing';
import { ServiceUnavailableException } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { RateLimits } from '../../../../../src/application/platform/rate-limits.js';
import { ApiError } from '../../../../../src/interface/http/platform/api-error.js';
import { ReadinessIndicators } from '../../../../../src/interface/http/platform/health-indicators.js';
import { HealthController, notReadyAnswer } from '../../../../../src/interface/http/platform/health.controller.js';
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

/** The controller as HealthModule builds it (terminus's own services), on the test's fakes. */
async function setUp() {
  const primary = new SwitchablePrimary();
  const replicas = new Replicas();
  const shutdown = new ShutdownState();
  const marks = new Marks();
  const moduleRef = await Test.createTestingModule({
    imports: [TerminusModule.forRoot({ logger: false })],
    controllers: [HealthController],
    providers: [
      ReadinessIndicators,
      { provide: Readiness, useValue: primary },
      { provide: ReplicaStatus, useValue: replicas },
      { provide: ShutdownState, useValue: shutdown },
      { provide: WarmUp, useValue: marks },
      { provide: RateLimits, useValue: new NoRateLimits() },
    ],
  }).compile();
  return { primary, replicas, shutdown, marks, health: moduleRef.get(HealthController) };
}

/** What /readyz answers: its body, or the error the NotReadyFilter writes for terminus's 503. */
async function answerOf(check: Promise<unknown>): Promise<unknown> {
  try {
    return await check;
  } catch (error) {
    if (error instanceof ServiceUnavailableException) return notReadyAnswer(error);
    throw error;
  }
}

const replica = (usable: boolean): ReplicaState => ({ name: 'replica-1:5432', usable, lagMs: usable ? 10 : Infinity });

describe('HealthController.live', () => {
  it('answers {"status":"ok"}, nothing more', async () => {
    const { health } = await setUp();

    await expect(health.live()).resolves.toEqual({ status: 'ok' });
  });
});

describe('HealthController.ready', () => {
  it('is ready while the primary answers', async () => {
    const { health } = await setUp();

    await expect(health.ready()).resolves.toEqual({ status: 'ok' });
  });

  it('is not ready without the primary when no replica serves reads: the outage every store answers with', async () => {
    const { health, primary, replicas } = await setUp();
    primary.failure = new StoreUnavailableError();
    replicas.states = [replica(false)];

    expect(await answerOf(health.ready())).toBeInstanceOf(StoreUnavailableError);
  });

  it('stays ready without the primary while a replica serves reads, and says that creates fail', async () => {
    const { health, primary, replicas } = await setUp();
    primary.failure = new StoreUnavailableError();
    replicas.states = [replica(false), replica(true)];

    await expect(health.ready()).resolves.toEqual({
      status: 'ok',
      degraded: [expect.stringMatching(/primary database does not answer.*creates answer 503/)],
    });
  });

  it('lets a failure that is not an outage through, replicas or not', async () => {
    const { health, primary, replicas } = await setUp();
    const bug = new Error('a bug');
    primary.failure = bug;
    replicas.states = [replica(true)];

    await expect(health.ready()).rejects.toBe(bug);
  });

  it('is not ready while draining, whatever the database says', async () => {
    const { health, shutdown, primary } = await setUp();
    shutdown.draining = true;
    primary.failure = new StoreUnavailableError();

    const answer = await answerOf(health.ready());

    expect(answer).toBeInstanceOf(ApiError);
    expect(answer).toMatchObject({ message: 'The service is shutting down', headers: { 'Retry-After': '1' } });
  });

  it('is not ready before it holds a high-water mark, and a mark that comes late does not hang the check', async () => {
    const { health, marks } = await setUp();
    marks.held = false;
    jest.useFakeTimers();
    try {
      const answer = answerOf(health.ready());
      await jest.advanceTimersByTimeAsync(1000);

      expect(await answer).toMatchObject({
        message: 'The service has not read the state of the pets yet',
        headers: { 'Retry-After': '1' },
      });
    } finally {
      jest.useRealTimers();
    }
  });

  it('stays ready while the pets do without something, and says what, after the database', async () => {
    const { health, marks, primary, replicas } = await setUp();
    marks.degraded = 'Redis does not answer: each instance reads its own high-water marks';
    primary.failure = new StoreUnavailableError();
    replicas.states = [replica(true)];

    await expect(health.ready()).resolves.toEqual({
      status: 'ok',
      degraded: [
        expect.stringMatching(/^the primary database does not answer/),
        'Redis does not answer: each instance reads its own high-water marks',
      ],
    });
  });

  it('reads a first high-water mark itself, and is ready once it holds one', async () => {
    const { health, marks } = await setUp();
    marks.held = false;
    marks.answers = true;

    await expect(health.ready()).resolves.toEqual({ status: 'ok' });
    expect(marks.done()).toBe(true);
  });
});

describe('notReadyAnswer', () => {
  it('says the service is shutting down when terminus found none down (the app closing)', () => {
    const answer = notReadyAnswer(new ServiceUnavailableException({ status: 'shutting_down', details: {} }));

    expect(answer).toMatchObject({ message: 'The service is shutting down', headers: { 'Retry-After': '1' } });
    expect(answer).toBeInstanceOf(ApiError);
  });
});
