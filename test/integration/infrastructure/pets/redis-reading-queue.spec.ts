import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { RedisReadingQueue } from '../../../../src/infrastructure/pets/redis-reading-queue.js';
import { connectRedis } from '../../../../src/infrastructure/platform/rate-limits/flexible-rate-limits.js';
import { describeReadingQueueContract } from '../../../contracts/reading-queue.contract.js';
import { startRedis, type TestRedis } from '../../../support/redis-server.js';

let redis: TestRedis;
const opened: RedisReadingQueue[] = [];
let raw: Redis;

beforeAll(async () => {
  redis = await startRedis();
  raw = new Redis(redis.url);
});
afterEach(() => {
  for (const queue of opened.splice(0)) queue.onModuleDestroy();
});
afterAll(async () => {
  raw?.disconnect();
  await redis?.stop();
});

/** A queue opened as Nest opens it (onModuleInit), on connections of its own. */
async function openQueue(namespace: string, log?: (line: string) => void): Promise<RedisReadingQueue> {
  const connect = async () => ({
    commands: await connectRedis(redis.url),
    subscriber: new Redis(redis.url),
    namespace,
  });
  const queue = new RedisReadingQueue(connect, 1000, log);
  opened.push(queue);
  await queue.onModuleInit();
  return queue;
}

describeReadingQueueContract('RedisReadingQueue', () => {
  // A namespace per test, as each database has its own.
  let namespace = randomUUID();
  const queues: RedisReadingQueue[] = [];
  beforeEach(async () => {
    namespace = randomUUID();
    queues.splice(0);
    for (let i = 0; i < 2; i++) queues.push(await openQueue(namespace));
  });
  return {
    queues: () => [queues[0]!, queues[1]!],
    lapseLease: async () => {
      await raw.del(`petstore:high-water:{${namespace}}:lease`);
    },
  };
});

describe('RedisReadingQueue on a Redis shared with other databases and other writers', () => {
  it('shares nothing between two databases: each namespace has its own lease and requests', async () => {
    const one = await openQueue(randomUUID());
    const other = await openQueue(randomUUID());

    expect(await one.enqueue('a/1', 'a')).toEqual(['a/1']);
    expect(await other.enqueue('b/1', 'b')).toEqual(['b/1']);
  });

  it('leaves unread, and says so, a reading of another shape on its channel', async () => {
    const namespace = randomUUID();
    const lines: string[] = [];
    const queue = await openQueue(namespace, (line) => lines.push(line));
    const received: unknown[] = [];
    const arrived = new Promise<void>((resolve) =>
      queue.onPublished((published) => {
        received.push(published);
        resolve();
      }),
    );
    const channel = `petstore:high-water:{${namespace}}:readings`;
    const reading = { upToId: 3, writers: [], lsn: '0/1', timeline: 1 };

    for (const message of [
      'not json',
      '{"requests":"a/1","reading":null}',
      '{"requests":["a/1"],"reading":{"upToId":"3"}}',
      '{"requests":["a/1"],"reading":{"upToId":3,"writers":[],"lsn":"0/1"}}',
    ])
      await raw.publish(channel, message);
    await raw.publish(channel, JSON.stringify({ requests: ['a/1'], reading }));
    await arrived;

    expect(received).toEqual([{ requests: ['a/1'], reading }]);
    expect(lines).toEqual(Array(4).fill(expect.stringContaining('unexpected shape')));
  });

  it('is not listening, and refuses requests, before Nest has opened it', async () => {
    const queue = new RedisReadingQueue(() => new Promise(() => undefined));

    expect(queue.listening()).toBe(false);
    await expect(queue.enqueue('a/1', 'a')).rejects.toThrow('not open yet');
  });
});
