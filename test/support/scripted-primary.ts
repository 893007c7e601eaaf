import type { Reading } from '../../src/infrastructure/pets/high-water-marks.js';
import type { TestClock } from './test-clock.js';

/**
 * The primary as the test sets it: `drawn` ids, `inFlight` transactions writing pets, its
 * `timeline`. Each reading takes `readingMs` of the clock and records when it ran.
 */
export class ScriptedPrimary {
  drawn = 0;
  inFlight: string[] = [];
  timeline = 1;
  failure: Error | null = null;
  readings: number[] = [];
  private lsn = 0;

  constructor(
    private readonly clock: TestClock,
    public readingMs = 1,
  ) {}

  readonly read = async (): Promise<Reading> => {
    this.readings.push(this.clock.now());
    const upToId = this.drawn;
    const writers = [...this.inFlight];
    await new Promise<void>(
      (resolve) => void this.clock.sleep(this.readingMs, new Promise(() => undefined)).then(resolve),
    );
    if (this.failure !== null) throw this.failure;
    return { upToId, writers, lsn: `0/${++this.lsn}`, timeline: this.timeline };
  };
}
