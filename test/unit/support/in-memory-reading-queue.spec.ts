import { describeReadingQueueContract } from '../../contracts/reading-queue.contract.js';
import { InMemoryReadingRedis } from '../../support/in-memory-reading-queue.js';
import { TestClock } from '../../support/test-clock.js';

describeReadingQueueContract('InMemoryReadingRedis', () => {
  let clock: TestClock;
  let redis: InMemoryReadingRedis;
  beforeEach(() => {
    clock = new TestClock();
    redis = new InMemoryReadingRedis(clock);
  });
  return {
    queues: () => [redis.queueFor(), redis.queueFor()],
    lapseLease: () => clock.pass(redis.leaseMs),
  };
});
