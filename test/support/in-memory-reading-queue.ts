import type { PublishedReading, ReadingQueue } from '../../src/infrastructure/pets/shared-readings.js';
import { REDIS_COMMAND_TIMEOUT_MS } from '../../src/infrastructure/platform/rate-limits/flexible-rate-limits.js';
import type { TestClock } from './test-clock.js';

/**
 * The reading queue as Redis keeps it (redis-reading-queue.ts's scripts), in memory, on the test's
 * clock: one per test, handing each instance a queue of its own on it (`queueFor()`). The test can
 * take it down, restart it (its requests and lease lost), and lose or hold back the readings it
 * publishes. test/contracts/reading-queue.contract.ts holds it to what the Redis queue does.
 */
export class InMemoryReadingRedis {
  /** Refuses every command at once: a Redis that is gone. */
  down = false;
  /** Answers no command: each fails after the client's command timeout (REDIS_COMMAND_TIMEOUT_MS). */
  paused = false;
  /** Runs each command, but its reply is lost: it fails after the command timeout all the same. */
  repliesLost = false;
  /** Published readings are dropped: a subscription that missed them. */
  losing = false;
  /** Published readings wait here until `deliverHeld()`: late. */
  held: PublishedReading[] | null = null;
  /** Every reading published, in order. */
  readonly published: PublishedReading[] = [];
  private requests: string[] = [];
  private requestsUntil = 0;
  private lease: { reader: string; until: number } | null = null;
  private readonly listeners: ((published: PublishedReading) => void)[] = [];

  constructor(
    private readonly clock: TestClock,
    readonly leaseMs = 1000,
  ) {}

  queueFor(): ReadingQueue {
    return {
      enqueue: (id, reader) => this.command(() => this.enqueue(id, reader)),
      publish: (published, reader, then) => this.command(() => this.take(published, reader, then)),
      onPublished: (listener) => this.listeners.push(listener),
      listening: () => !this.down,
    };
  }

  /** A restart without persistence: the requests and the lease are gone. */
  restart(): void {
    this.requests = [];
    this.lease = null;
  }

  deliverHeld(): void {
    for (const published of this.held?.splice(0) ?? []) this.deliver(published);
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

  private enqueue(id: string, reader: string): string[] | null {
    this.expire();
    this.requests.push(id);
    this.requestsUntil = this.clock.now() + this.leaseMs;
    if (this.lease !== null && this.lease.reader !== reader) return null;
    this.lease = { reader, until: this.clock.now() + this.leaseMs };
    return this.requests.splice(0);
  }

  /** The queue's publish: the reading goes out, then the requests queued since go to the lease's holder. */
  private take(published: PublishedReading, reader: string, { keep }: { keep: boolean }): string[] | null {
    this.expire();
    this.publish(published);
    if (this.lease?.reader !== reader) return null;
    if (this.requests.length === 0 && !keep) {
      this.lease = null;
      return null;
    }
    this.lease.until = this.clock.now() + this.leaseMs;
    return this.requests.splice(0);
  }

  /** Publishes on the queue's channel, as any writer to it can. */
  publish(published: PublishedReading): void {
    this.published.push(published);
    if (this.losing) return;
    if (this.held !== null) this.held.push(published);
    else this.deliver(published);
  }

  private deliver(published: PublishedReading): void {
    // On another connection: after the command's own reply.
    void Promise.resolve().then(() => {
      for (const listener of this.listeners) listener(structuredClone(published));
    });
  }

  private expire(): void {
    if (this.lease !== null && this.lease.until <= this.clock.now()) this.lease = null;
    if (this.requestsUntil <= this.clock.now()) this.requests = [];
  }
}
