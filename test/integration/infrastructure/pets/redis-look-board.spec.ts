import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { RedisLookBoard } from '../../../../src/infrastructure/pets/redis-look-board.js';
import { connectRedis } from '../../../../src/infrastructure/platform/rate-limits/flexible-rate-limits.js';
import { describeLookBoardContract } from '../../../contracts/look-board.contract.js';
import { startRedis, type TestRedis } from '../../../support/redis-server.js';

let redis: TestRedis;
const opened: RedisLookBoard[] = [];
let raw: Redis;

beforeAll(async () => {
  redis = await startRedis();
  raw = new Redis(redis.url);
});
afterEach(() => {
  for (const board of opened.splice(0)) board.close();
});
afterAll(async () => {
  raw?.disconnect();
  await redis?.stop();
});

describeLookBoardContract('RedisLookBoard', () => {
  // A namespace per test, as each database has its own.
  let namespace = randomUUID();
  const boards: RedisLookBoard[] = [];
  beforeEach(async () => {
    namespace = randomUUID();
    boards.splice(0);
    for (let i = 0; i < 2; i++) {
      const board = await new RedisLookBoard(await connectRedis(redis.url), new Redis(redis.url), namespace).open();
      opened.push(board);
      boards.push(board);
    }
  });
  return {
    boards: () => [boards[0]!, boards[1]!],
    lapseLease: async () => {
      await raw.del(`petstore:marks:{${namespace}}:lease`);
    },
  };
});

describe('RedisLookBoard on a Redis shared with other databases and other writers', () => {
  async function boardIn(namespace: string, log?: (line: string) => void): Promise<RedisLookBoard> {
    const board = await new RedisLookBoard(
      await connectRedis(redis.url),
      new Redis(redis.url),
      namespace,
      1000,
      log,
    ).open();
    opened.push(board);
    return board;
  }

  it('shares nothing between two databases: each namespace has its own lease and asks', async () => {
    const one = await boardIn(randomUUID());
    const other = await boardIn(randomUUID());

    expect(await one.ask('a/1', 'a')).toEqual(['a/1']);
    expect(await other.ask('b/1', 'b')).toEqual(['b/1']);
  });

  it('leaves unread, and says so, an answer of another shape on its channel', async () => {
    const namespace = randomUUID();
    const lines: string[] = [];
    const board = await boardIn(namespace, (line) => lines.push(line));
    const received: unknown[] = [];
    const arrived = new Promise<void>((resolve) =>
      board.onAnswer((answer) => {
        received.push(answer);
        resolve();
      }),
    );
    const channel = `petstore:marks:{${namespace}}:answers`;
    const snapshot = { upToId: 3, holders: [], position: '0/1' };

    for (const message of ['not json', '{"asks":"a/1","snapshot":null}', '{"asks":["a/1"],"snapshot":{"upToId":"3"}}'])
      await raw.publish(channel, message);
    await raw.publish(channel, JSON.stringify({ asks: ['a/1'], snapshot }));
    await arrived;

    expect(received).toEqual([{ asks: ['a/1'], snapshot }]);
    expect(lines).toEqual(Array(3).fill(expect.stringContaining('unexpected shape')));
  });
});
