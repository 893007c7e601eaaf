import type { MarkSnapshot } from '../../src/infrastructure/pets/mark-snapshot.js';
import type { TestClock } from './test-clock.js';

/**
 * The store as the test sets it: `drawn` ids, `inFlight` transactions holding the pets lock. Each
 * look takes `lookMs` of the clock and records when it ran.
 */
export class ScriptedStore {
  drawn = 0;
  inFlight: string[] = [];
  failure: Error | null = null;
  looks: number[] = [];
  private lsn = 0;

  constructor(
    private readonly clock: TestClock,
    public lookMs = 1,
  ) {}

  readonly look = async (): Promise<MarkSnapshot> => {
    this.looks.push(this.clock.now());
    const upToId = this.drawn;
    const holders = [...this.inFlight];
    await new Promise<void>(
      (resolve) => void this.clock.sleep(this.lookMs, new Promise(() => undefined)).then(resolve),
    );
    if (this.failure !== null) throw this.failure;
    return { upToId, holders, position: `0/${++this.lsn}` };
  };
}
