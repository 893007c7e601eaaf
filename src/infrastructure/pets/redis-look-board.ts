import type { Redis } from 'ioredis';
import pTimeout from 'p-timeout';
import { connectRedis } from '../platform/rate-limits/flexible-rate-limits.js';
import { propertyOf } from '../platform/property-of.js';
import type { LookAnswer, LookBoard } from './shared-looks.js';

/**
 * How long a looker holds the lease without answering: far longer than a look takes, so that one
 * instance looks at a time, and short enough that a looker gone (killed mid-look) holds up the
 * others' sharing briefly: meanwhile each instance looks itself (SharedLooks' answer wait).
 */
export const LOOK_LEASE_MS = 1000;
/** How long a starting instance waits for its subscription before it reads its first mark (itself, if Redis is away). */
export const LOOK_BOARD_START_MS = 1000;

// Each script runs whole on the Redis server, so an ask is either taken by the look about to begin
// or left for the next one. The asks expire with the lease: asks no looker takes do not pile up.
const ASK = `
redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
local holder = redis.call('GET', KEYS[2])
if holder and holder ~= ARGV[2] then return false end
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
local asks = redis.call('LRANGE', KEYS[1], 0, -1)
redis.call('DEL', KEYS[1])
return asks`;
const ANSWER = `
redis.call('PUBLISH', ARGV[3], ARGV[4])
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return false end
local asks = redis.call('LRANGE', KEYS[1], 0, -1)
if #asks == 0 and ARGV[5] ~= 'keep' then
  redis.call('DEL', KEYS[2])
  return false
end
redis.call('DEL', KEYS[1])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return asks`;

/**
 * The look board on Redis: a list of asks and a lease (keys under one hash tag), and a channel for
 * the answers. `namespace` is the database's own (a shared secret kept in it): instances of
 * another database on the same Redis never share its looks.
 */
export class RedisLookBoard implements LookBoard {
  private readonly asks: string;
  private readonly lease: string;
  private readonly channel: string;
  private readonly listeners: ((answer: LookAnswer) => void)[] = [];

  constructor(
    private readonly commands: Redis,
    private readonly subscriber: Redis,
    namespace: string,
    private readonly leaseMs = LOOK_LEASE_MS,
    private readonly log: (line: string) => void = () => undefined,
  ) {
    const prefix = `petstore:marks:{${namespace}}`;
    this.asks = `${prefix}:asks`;
    this.lease = `${prefix}:lease`;
    this.channel = `${prefix}:answers`;
    subscriber.on('message', (channel: string, message: string) => {
      if (channel === this.channel) this.received(message);
    });
  }

  /** Subscribes to the answers; resolves once subscribed. */
  async open(): Promise<this> {
    await this.subscriber.subscribe(this.channel);
    return this;
  }

  async ask(id: string, looker: string): Promise<string[] | null> {
    return asksOf(await this.commands.eval(ASK, 2, this.asks, this.lease, id, looker, this.leaseMs));
  }

  async answer(answer: LookAnswer, looker: string, { keep }: { keep: boolean }): Promise<string[] | null> {
    const reply = await this.commands.eval(
      ANSWER,
      2,
      ...[this.asks, this.lease, looker, this.leaseMs, this.channel, JSON.stringify(answer), keep ? 'keep' : 'give up'],
    );
    return asksOf(reply);
  }

  onAnswer(listener: (answer: LookAnswer) => void): void {
    this.listeners.push(listener);
  }

  listening(): boolean {
    return this.subscriber.status === 'ready';
  }

  /** Nest calls it on close; a look asked for afterwards is read by the instance itself. */
  onModuleDestroy(): void {
    this.close();
  }

  close(): void {
    this.subscriber.disconnect();
    this.commands.disconnect();
  }

  private received(message: string): void {
    const answer = answerOf(message);
    if (answer === null) {
      this.log(`Settled marks: an answer of an unexpected shape on ${this.channel} was left unread`);
      return;
    }
    for (const listener of this.listeners) listener(answer);
  }
}

/**
 * A board on the Redis at `url`, whether Redis answers or not: its commands fail at once while
 * Redis is away (connectRedis), so that the instance looks itself meanwhile, and its subscription
 * waits for Redis however long it is away, and comes back with every reconnection. Resolves once
 * subscribed, or after LOOK_BOARD_START_MS.
 */
export async function openRedisLookBoard(
  url: string,
  namespace: string,
  log: (line: string) => void,
): Promise<RedisLookBoard> {
  const commands = await connectRedis(url);
  const { Redis } = await import('ioredis');
  const subscriber = new Redis(url, { connectTimeout: 2000, maxRetriesPerRequest: null });
  // A failure shows in SharedLooks' log line and in /readyz; the clients reconnect on their own.
  for (const client of [commands, subscriber]) client.on('error', () => undefined);
  const board = new RedisLookBoard(commands, subscriber, namespace, LOOK_LEASE_MS, log);
  const subscribing = board
    .open()
    .catch((error: unknown) => log(`Settled marks: no subscription to the looks' answers: ${String(error)}`));
  await pTimeout(subscribing, { milliseconds: LOOK_BOARD_START_MS, fallback: () => undefined });
  return board;
}

function asksOf(reply: unknown): string[] | null {
  if (reply === null) return null;
  if (!Array.isArray(reply) || !reply.every((id) => typeof id === 'string'))
    throw new Error('the look board answered an unexpected shape');
  return reply;
}

function answerOf(message: string): LookAnswer | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(message);
  } catch {
    return null;
  }
  const asks = propertyOf(parsed, 'asks');
  const snapshot = propertyOf(parsed, 'snapshot');
  if (!Array.isArray(asks) || !asks.every((id) => typeof id === 'string')) return null;
  if (snapshot === null) return { asks, snapshot: null };
  const upToId = propertyOf(snapshot, 'upToId');
  const holders = propertyOf(snapshot, 'holders');
  const position = propertyOf(snapshot, 'position');
  const look = propertyOf(snapshot, 'look');
  if (typeof upToId !== 'number' || typeof position !== 'string') return null;
  if (!Array.isArray(holders) || !holders.every((holder) => typeof holder === 'string')) return null;
  if (look === undefined) return { asks, snapshot: { upToId, holders, position } };
  const looker = propertyOf(look, 'looker');
  const seq = propertyOf(look, 'seq');
  if (typeof looker !== 'string' || typeof seq !== 'number') return null;
  return { asks, snapshot: { upToId, holders, position, look: { looker, seq } } };
}
