import type { Reading } from '../../src/infrastructure/pets/high-water-marks.js';
import type { PublishedReading, ReadingQueue } from '../../src/infrastructure/pets/shared-readings.js';

export type ReadingQueues = {
  /** Two instances' queues on one store, fresh for each test. */
  queues(): [ReadingQueue, ReadingQueue];
  /** The lease lapses now, as it does `leaseMs` after its holder's last command. */
  lapseLease(): Promise<void>;
};

/** Give the lease up when no request is left. */
const GIVE_UP = { keep: false };
const reading: Reading = { upToId: 7, writers: ['3/10'], lsn: '0/16B3748', timeline: 2, by: { reader: 'a', seq: 3 } };

/** The readings a queue's listener receives, and a wait for the next `count` of them. */
function listen(queue: ReadingQueue): { received: PublishedReading[]; next(count: number): Promise<void> } {
  const received: PublishedReading[] = [];
  let waiter: { count: number; resolve(): void } | null = null;
  queue.onPublished((published) => {
    received.push(published);
    if (waiter !== null && received.length >= waiter.count) waiter.resolve();
  });
  return {
    received,
    next: (count) =>
      new Promise<void>((resolve) => {
        if (received.length >= count) resolve();
        else waiter = { count, resolve };
      }),
  };
}

/** One behaviour suite, run against the in-memory queue (unit) and Redis (integration). */
export function describeReadingQueueContract(name: string, setup: () => ReadingQueues): void {
  describe(`${name} (ReadingQueue contract)`, () => {
    const store = setup();

    it('gives the first request the lease, with the requests queued (its own among them)', async () => {
      const [a] = store.queues();

      expect(await a.enqueue('a/1', 'a')).toEqual(['a/1']);
    });

    it('gives the reader that holds the lease the requests queued at its next request', async () => {
      const [a, b] = store.queues();
      await a.enqueue('a/1', 'a');
      await b.enqueue('b/1', 'b');

      expect(await a.enqueue('a/2', 'a')).toEqual(['b/1', 'a/2']);
    });

    it('leaves a request made while another instance reads for that instance to take before its next reading', async () => {
      const [a, b] = store.queues();
      await a.enqueue('a/1', 'a');

      const whileAReads = await b.enqueue('b/1', 'b');
      const forTheNextReading = await a.publish({ requests: ['a/1'], reading }, 'a', GIVE_UP);

      expect(whileAReads).toBeNull();
      expect(forTheNextReading).toEqual(['b/1']);
    });

    it('publishes a reading to every instance, as it was sent, a failed one too', async () => {
      const [a, b] = store.queues();
      const atA = listen(a);
      const atB = listen(b);
      await a.enqueue('a/1', 'a');

      await a.publish({ requests: ['a/1', 'b/1'], reading }, 'a', GIVE_UP);
      await a.publish({ requests: ['b/2'], reading: null }, 'a', GIVE_UP);
      await Promise.all([atA.next(2), atB.next(2)]);

      const sent = [
        { requests: ['a/1', 'b/1'], reading },
        { requests: ['b/2'], reading: null },
      ];
      expect(atA.received).toEqual(sent);
      expect(atB.received).toEqual(sent);
    });

    it('gives the lease up when no request is left, and the next request takes it', async () => {
      const [a, b] = store.queues();
      await a.enqueue('a/1', 'a');

      const nextForA = await a.publish({ requests: ['a/1'], reading }, 'a', GIVE_UP);
      const bTakesTheLease = await b.enqueue('b/1', 'b');

      expect(nextForA).toBeNull();
      expect(bTakesTheLease).toEqual(['b/1']);
    });

    it('keeps the lease with no request left when the reader has its own requests left', async () => {
      const [a, b] = store.queues();
      await a.enqueue('a/1', 'a');

      const kept = await a.publish({ requests: ['a/1'], reading }, 'a', { keep: true });
      const whileKept = await b.enqueue('b/1', 'b');

      expect(kept).toEqual([]);
      expect(whileKept).toBeNull();
    });

    it('gives a lapsed lease to the next request, and nothing more to the reader that lost it', async () => {
      const [a, b] = store.queues();
      await a.enqueue('a/1', 'a');
      await store.lapseLease();

      const bTakesTheLease = await b.enqueue('b/1', 'b');
      await a.enqueue('a/2', 'a');
      const nextForA = await a.publish({ requests: ['a/1'], reading }, 'a', GIVE_UP);
      const nextForB = await b.publish({ requests: ['b/1'], reading }, 'b', GIVE_UP);

      expect(bTakesTheLease).toEqual(['b/1']);
      expect(nextForA).toBeNull();
      expect(nextForB).toEqual(['a/2']);
    });
  });
}
