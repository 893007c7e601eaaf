import type { Clock } from '../../src/infrastructure/pets/clock.js';

/** A clock the test moves: sleeps end when it passes their time, or when they are woken. */
export class TestClock implements Clock {
  at = 0;
  private sleepers: { until: number; resolve(): void }[] = [];

  now(): number {
    return this.at;
  }

  sleep(ms: number, wake: Promise<void>): Promise<void> {
    return new Promise((resolve) => {
      this.sleepers.push({ until: this.at + ms, resolve });
      void wake.then(resolve);
    });
  }

  /** Moves time on by `ms`, waking the sleepers due on the way, one settling at a time. */
  async pass(ms: number): Promise<void> {
    const end = this.at + ms;
    for (;;) {
      await settle();
      const due = this.sleepers.filter((sleeper) => sleeper.until <= end).sort((a, b) => a.until - b.until)[0];
      if (due === undefined) break;
      this.sleepers.splice(this.sleepers.indexOf(due), 1);
      this.at = Math.max(this.at, due.until);
      due.resolve();
    }
    this.at = end;
    await settle();
  }
}

/** Lets every promise already resolved run its callbacks (a few turns of the microtask queue). */
export async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}
