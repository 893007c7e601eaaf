import { describeLookBoardContract } from '../../contracts/look-board.contract.js';
import { InMemoryLookRedis } from '../../support/in-memory-look-board.js';
import { TestClock } from '../../support/test-clock.js';

describeLookBoardContract('InMemoryLookRedis', () => {
  let clock: TestClock;
  let redis: InMemoryLookRedis;
  beforeEach(() => {
    clock = new TestClock();
    redis = new InMemoryLookRedis(clock);
  });
  return {
    boards: () => [redis.boardFor(), redis.boardFor()],
    lapseLease: () => clock.pass(redis.leaseMs),
  };
});
