import { randomUUID } from 'node:crypto';
import type { Clock } from './clock.js';
import type { Reading } from './high-water-marks.js';

// The high-water mark's readings shared by the instances (docs/internals.md, "Exact paging"): one
// instance reads at a time, for every instance that queued a request before its reading began.

/** One reading, published with the requests it answers; `reading` null when it failed. */
export type PublishedReading = { requests: string[]; reading: Reading | null };

/**
 * Where the instances queue their requests for a reading and publish their readings (Redis:
 * redis-reading-queue.ts). A request is answered only by a reading that took it off the queue
 * before the reading began, so by a reading that began after the request was queued: no counter
 * or clock orders requests and readings, and a queue that loses its state (a restart, a failover)
 * loses requests, never that order.
 */
export type ReadingQueue = {
  /**
   * Queues the request. When no other instance holds the lease to read, `reader` takes it (or
   * keeps it: a lease taken by a command whose reply was lost is its own) and gets every queued
   * request back, taken off, its own among them: it reads for them. Otherwise null: the instance
   * that holds the lease takes the request before its next reading.
   */
  enqueue(id: string, reader: string): Promise<string[] | null>;
  /**
   * Publishes the reading to every instance. Then, while `reader` holds the lease, takes the
   * requests queued since, for its next reading. With none, the lease is kept when `keep` (the
   * reader has requests of its own left: the answer is []), else given up. Null when the reader no
   * longer holds it.
   */
  publish(published: PublishedReading, reader: string, then: { keep: boolean }): Promise<string[] | null>;
  /** Every reading published from now on, by any instance. One may come late, or never. */
  onPublished(listener: (published: PublishedReading) => void): void;
  /** False while published readings cannot arrive (the queue's subscription is down). */
  listening(): boolean;
};

export type SharedReadingOptions = {
  /**
   * How long a request waits for another instance's reading before this instance reads itself:
   * the reading in flight and the next one take a few milliseconds, so this is a reading far
   * slower than usual, a reader gone, or a published reading lost.
   */
  answerWaitMs: number;
  /** After the queue failed, how long this instance reads for itself before it tries the queue again. */
  retryMs: number;
};

export const SHARED_READING_OPTIONS: SharedReadingOptions = { answerWaitMs: 250, retryMs: 1000 };

type Outcome = { reading: Reading } | { error: unknown } | { readYourself: true };

/** One request of this instance, until its outcome arrives. */
class PendingRequest {
  outcome: Outcome | null = null;
  /** Taken by this instance's own reading, which the request waits for however long it takes. */
  readHere = false;
  private readonly arrival = Promise.withResolvers<void>();
  readonly arrived = this.arrival.promise;

  settle(outcome: Outcome): void {
    this.outcome = outcome;
    this.arrival.resolve();
  }
}

/**
 * Readings shared by the instances through a ReadingQueue: `read()` resolves with a reading that
 * began after it was called, on this instance or another. Every reading made for the queue is
 * published, numbered (ReadingOrder), to every instance: `onReading` hears them. While the queue
 * fails, or an answer does not come in time, this instance reads itself, as it would alone.
 */
export class SharedReadings {
  /** This instance on the queue: its requests and its lease carry it. */
  readonly instance = randomUUID();
  private requested = 0;
  private readonly pending = new Map<string, PendingRequest>();
  /** The readings this instance made for the queue, numbered one after another. */
  private readings = 0;
  private readonly readingListeners: ((reading: Reading) => void)[] = [];
  /** When the queue last failed; null while it works. */
  private failedAt: number | null = null;
  /** While this instance reads for the requests it took: those taken meanwhile, for its next reading. */
  private nextReading: string[] | null = null;

  constructor(
    private readonly queue: ReadingQueue,
    private readonly readHere: () => Promise<Reading>,
    private readonly options: SharedReadingOptions,
    private readonly clock: Clock,
    private readonly log: (line: string) => void,
  ) {
    queue.onPublished((published) => this.published(published));
  }

  readonly read = async (): Promise<Reading> => {
    if (!this.shares()) return this.readHere();
    const id = `${this.instance}/${++this.requested}`;
    const request = new PendingRequest();
    this.pending.set(id, request);
    if (this.nextReading !== null) {
      // This instance reads already: its next reading begins after this request, and answers it.
      this.readFor([id]);
    } else {
      let taken: string[] | null;
      try {
        taken = await this.queue.enqueue(id, this.instance);
      } catch (error) {
        this.pending.delete(id);
        this.failed(error);
        return this.readHere();
      }
      this.works();
      if (taken !== null) this.readFor(taken);
    }
    await this.clock.sleep(this.options.answerWaitMs, request.arrived);
    // A reading of this instance's own is waited for: it ends within the store's statement limit.
    if (request.outcome === null && request.readHere) await request.arrived;
    this.pending.delete(id);
    const outcome = request.outcome;
    if (outcome === null || 'readYourself' in outcome) return this.readHere();
    if ('error' in outcome) throw outcome.error;
    return outcome.reading;
  };

  /** Hears every reading any instance published, this one's included. */
  onReading(listener: (reading: Reading) => void): void {
    this.readingListeners.push(listener);
  }

  /** Null while readings are shared, else why each instance reads for itself. */
  degradation(): string | null {
    return this.failedAt === null ? null : 'Redis does not answer: each instance reads its own high-water marks';
  }

  /**
   * Reads for the requests taken, then for those queued meanwhile, while any are: one loop per
   * instance. Requests taken while it runs (the lease is this instance's already) join its next reading.
   */
  private readFor(taken: string[]): void {
    this.markReadHere(taken);
    if (this.nextReading !== null) {
      this.nextReading.push(...taken);
      return;
    }
    this.nextReading = [];
    void this.readWhileTaken(taken);
  }

  private async readWhileTaken(taken: string[]): Promise<void> {
    let requests = taken;
    try {
      while (requests.length > 0) {
        let reading: Reading | null = null;
        try {
          reading = { ...(await this.readHere()), by: { reader: this.instance, seq: ++this.readings } };
          this.settle(requests, { reading });
        } catch (error) {
          // This instance's callers get the store's error; the other instances read themselves.
          this.settle(requests, { error });
        }
        let next: string[] | null = null;
        try {
          next = await this.queue.publish({ requests, reading }, this.instance, {
            keep: (this.nextReading?.length ?? 0) > 0,
          });
        } catch (error) {
          // The lease lapses in Redis; the requests left queued are read for by their own instances.
          this.failed(error);
        }
        requests = [...(next ?? []), ...(this.nextReading?.splice(0) ?? [])];
        this.markReadHere(requests);
      }
    } finally {
      // In the turn that found no request left: none joins a loop that has ended.
      this.nextReading = null;
    }
  }

  private markReadHere(requests: string[]): void {
    for (const id of requests) {
      const request = this.pending.get(id);
      if (request !== undefined) request.readHere = true;
    }
  }

  private published({ requests, reading }: PublishedReading): void {
    this.settle(
      requests.filter((id) => this.isOwn(id)),
      reading === null ? { readYourself: true } : { reading },
    );
    if (reading !== null) for (const listener of this.readingListeners) listener(reading);
  }

  private settle(requests: string[], outcome: Outcome): void {
    for (const id of requests) {
      this.pending.get(id)?.settle(outcome);
      this.pending.delete(id);
    }
  }

  private isOwn(id: string): boolean {
    return id.startsWith(`${this.instance}/`);
  }

  /** Whether this reading goes through the queue: not while it is silent, nor for `retryMs` after it failed. */
  private shares(): boolean {
    if (this.failedAt !== null && this.clock.now() - this.failedAt < this.options.retryMs) return false;
    if (this.queue.listening()) return true;
    this.failed(new Error('its subscription is down'));
    return false;
  }

  private failed(error: unknown): void {
    if (this.failedAt === null)
      this.log(
        `High-water marks: Redis failed (${error instanceof Error ? error.message : String(error)}); each instance reads for itself`,
      );
    this.failedAt = this.clock.now();
  }

  private works(): void {
    if (this.failedAt !== null) this.log('High-water marks: Redis answers again; the instances share their readings');
    this.failedAt = null;
  }
}
