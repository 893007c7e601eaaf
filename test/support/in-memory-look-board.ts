import type { LookAnswer, LookBoard } from '../../src/infrastructure/pets/shared-looks.js';
import { REDIS_COMMAND_TIMEOUT_MS } from '../../src/infrastructure/platform/rate-limits/flexible-rate-limits.js';
import type { TestClock } from './test-clock.js';

/**
 * The look board as Redis keeps it (redis-look-board.ts's scripts), in memory, on the test's clock:
 * one per test, handing each instance a board of its own on it (`boardFor()`). The test can take it
 * down, restart it (its asks and lease lost), and lose or hold back the answers it publishes.
 * test/contracts/look-board.contract.ts holds it to what the Redis board does.
 */
export class InMemoryLookRedis {
  /** Refuses every command at once: a Redis that is gone. */
  down = false;
  /** Answers no command: each fails after the client's command timeout (REDIS_COMMAND_TIMEOUT_MS). */
  paused = false;
  /** Runs each command, but its reply is lost: it fails after the command timeout all the same. */
  repliesLost = false;
  /** Published answers are dropped: a subscription that missed them. */
  losing = false;
  /** Published answers wait here until `deliverHeld()`: late. */
  held: LookAnswer[] | null = null;
  /** Every answer published, in order. */
  readonly published: LookAnswer[] = [];
  private asks: string[] = [];
  private asksUntil = 0;
  private lease: { looker: string; until: number } | null = null;
  private readonly listeners: ((answer: LookAnswer) => void)[] = [];

  constructor(
    private readonly clock: TestClock,
    readonly leaseMs = 1000,
  ) {}

  boardFor(): LookBoard {
    return {
      ask: (id, looker) => this.command(() => this.ask(id, looker)),
      answer: (answer, looker, then) => this.command(() => this.answer(answer, looker, then)),
      onAnswer: (listener) => this.listeners.push(listener),
      listening: () => !this.down,
    };
  }

  /** A restart without persistence: the asks and the lease are gone. */
  restart(): void {
    this.asks = [];
    this.lease = null;
  }

  deliverHeld(): void {
    for (const answer of this.held?.splice(0) ?? []) this.deliver(answer);
    this.held = null;
  }

  private async command<T>(work: () => T): Promise<T> {
    await Promise.resolve();
    if (this.down) throw new Error('Connection is closed.');
    if (this.paused || this.repliesLost) {
      if (this.repliesLost) work();
      await this.clock.sleep(REDIS_COMMAND_TIMEOUT_MS, new Promise(() => undefined));
      throw new Error('Command timed out');
    }
    return work();
  }

  private ask(id: string, looker: string): string[] | null {
    this.expire();
    this.asks.push(id);
    this.asksUntil = this.clock.now() + this.leaseMs;
    if (this.lease !== null && this.lease.looker !== looker) return null;
    this.lease = { looker, until: this.clock.now() + this.leaseMs };
    return this.asks.splice(0);
  }

  private answer(answer: LookAnswer, looker: string, { keep }: { keep: boolean }): string[] | null {
    this.expire();
    this.publish(answer);
    if (this.lease?.looker !== looker) return null;
    if (this.asks.length === 0 && !keep) {
      this.lease = null;
      return null;
    }
    this.lease.until = this.clock.now() + this.leaseMs;
    return this.asks.splice(0);
  }

  /** Publishes on the board's channel, as any writer to it can. */
  publish(answer: LookAnswer): void {
    this.published.push(answer);
    if (this.losing) return;
    if (this.held !== null) this.held.push(answer);
    else this.deliver(answer);
  }

  private deliver(answer: LookAnswer): void {
    // On another connection: after the command's own reply.
    void Promise.resolve().then(() => {
      for (const listener of this.listeners) listener(structuredClone(answer));
    });
  }

  private expire(): void {
    if (this.lease !== null && this.lease.until <= this.clock.now()) this.lease = null;
    if (this.asksUntil <= this.clock.now()) this.asks = [];
  }
}
