import type { Redis } from 'ioredis';
import pTimeout from 'p-timeout';
import { connectRedis } from '../platform/rate-limits/flexible-rate-limits.js';
import { propertyOf } from '../platform/property-of.js';
import type { Reading } from './high-water-marks.js';
import type { PublishedReading, ReadingQueue } from './shared-readings.js';

/**
 * How long a reader holds the lease without publishing: far longer than a reading takes, so that
 * one instance reads at a time, and short enough that a reader gone (killed mid-reading) holds up
 * the others' sharing briefly: meanwhile each instance reads itself (SharedReadings' answer wait).
 */
export const READING_LEASE_MS = 1000;
/** How long a starting instance waits for its subscription before it reads its first mark (itself, if Redis is away). */
export const READING_QUEUE_START_MS = 1000;

// Each script runs whole on the Redis server, so a request is either taken by the reading about to
// begin or left for the next one. Requests expire with the lease: requests no reader takes do not pile up.
const ENQUEUE = `
redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
local holder = redis.call('GET', KEYS[2])
if holder and holder ~= ARGV[2] then return false end
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
local requests = redis.call('LRANGE', KEYS[1], 0, -1)
redis.call('DEL', KEYS[1])
return requests`;
const PUBLISH = `
redis.call('PUBLISH', ARGV[3], ARGV[4])
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return false end
local requests = redis.call('LRANGE', KEYS[1], 0, -1)
if #requests == 0 and ARGV[5] ~= 'keep' then
  redis.call('DEL', KEYS[2])
  return false
end
redis.call('DEL', KEYS[1])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return requests`;

/** The queue's two Redis connections (one subscribed), and the database's namespace for its keys. */
export type ReadingQueueConnections = { commands: Redis; subscriber: Redis; namespace: string };

/**
 * The reading queue on Redis: a list of requests and a lease (keys under one hash tag), and a
 * channel for the readings. `namespace` is the database's own (a shared secret kept in it):
 * instances of another database on the same Redis never share its readings. Opened by Nest's
 * onModuleInit, before the first mark is read; until then, and while its subscription is down,
 * `listening()` is false and each instance reads for itself.
 */
export class RedisReadingQueue implements ReadingQueue {
  private keys: { requests: string; lease: string; channel: string } | null = null;
  private connections: ReadingQueueConnections | null = null;
  private readonly listeners: ((published: PublishedReading) => void)[] = [];

  constructor(
    private readonly connect: () => Promise<ReadingQueueConnections>,
    private readonly leaseMs = READING_LEASE_MS,
    private readonly log: (line: string) => void = () => undefined,
  ) {}

  /** Connects and subscribes; resolves once subscribed, or after READING_QUEUE_START_MS without Redis. */
  async onModuleInit(): Promise<void> {
    const connections = await this.connect();
    const { subscriber, namespace } = connections;
    const prefix = `petstore:high-water:{${namespace}}`;
    const keys = { requests: `${prefix}:requests`, lease: `${prefix}:lease`, channel: `${prefix}:readings` };
    subscriber.on('message', (channel: string, message: string) => {
      if (channel === keys.channel) this.received(message);
    });
    this.connections = connections;
    this.keys = keys;
    const subscribing = subscriber
      .subscribe(keys.channel)
      .catch((error: unknown) => this.log(`High-water marks: no subscription to the readings: ${String(error)}`));
    await pTimeout(subscribing, { milliseconds: READING_QUEUE_START_MS, fallback: () => undefined });
  }

  async enqueue(id: string, reader: string): Promise<string[] | null> {
    const { commands, keys } = this.opened();
    return requestsOf(await commands.eval(ENQUEUE, 2, keys.requests, keys.lease, id, reader, this.leaseMs));
  }

  async publish(published: PublishedReading, reader: string, { keep }: { keep: boolean }): Promise<string[] | null> {
    const { commands, keys } = this.opened();
    const message = JSON.stringify(published);
    const reply = await commands.eval(
      PUBLISH,
      2,
      ...[keys.requests, keys.lease, reader, this.leaseMs, keys.channel, message, keep ? 'keep' : 'give up'],
    );
    return requestsOf(reply);
  }

  onPublished(listener: (published: PublishedReading) => void): void {
    this.listeners.push(listener);
  }

  listening(): boolean {
    return this.connections?.subscriber.status === 'ready';
  }

  /** Nest calls it on close; a reading asked for afterwards is made by the instance itself. */
  onModuleDestroy(): void {
    this.connections?.subscriber.disconnect();
    this.connections?.commands.disconnect();
  }

  private opened(): { commands: Redis; keys: { requests: string; lease: string; channel: string } } {
    if (this.connections === null || this.keys === null) throw new Error('the reading queue is not open yet');
    return { commands: this.connections.commands, keys: this.keys };
  }

  private received(message: string): void {
    const published = publishedOf(message);
    if (published === null) {
      this.log(`High-water marks: a reading of an unexpected shape on ${this.keys?.channel} was left unread`);
      return;
    }
    for (const listener of this.listeners) listener(published);
  }
}

/**
 * Connections to the Redis at `url`, whether Redis answers or not: the commands fail at once while
 * Redis is away (connectRedis), so that the instance reads itself meanwhile, and the subscription
 * waits for Redis however long it is away, and comes back with every reconnection.
 */
export async function redisReadingQueueConnections(url: string, namespace: string): Promise<ReadingQueueConnections> {
  const commands = await connectRedis(url);
  const { Redis } = await import('ioredis');
  const subscriber = new Redis(url, { connectTimeout: 2000, maxRetriesPerRequest: null });
  // A failure shows in SharedReadings' log line and in /readyz; the clients reconnect on their own.
  for (const client of [commands, subscriber]) client.on('error', () => undefined);
  return { commands, subscriber, namespace };
}

function requestsOf(reply: unknown): string[] | null {
  if (reply === null) return null;
  if (!Array.isArray(reply) || !reply.every((id) => typeof id === 'string'))
    throw new Error('the reading queue answered an unexpected shape');
  return reply;
}

function publishedOf(message: string): PublishedReading | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(message);
  } catch {
    return null;
  }
  const requests = propertyOf(parsed, 'requests');
  const reading = propertyOf(parsed, 'reading');
  if (!Array.isArray(requests) || !requests.every((id) => typeof id === 'string')) return null;
  if (reading === null) return { requests, reading: null };
  const parsedReading = readingOf(reading);
  return parsedReading === null ? null : { requests, reading: parsedReading };
}

function readingOf(value: unknown): Reading | null {
  const upToId = propertyOf(value, 'upToId');
  const writers = propertyOf(value, 'writers');
  const lsn = propertyOf(value, 'lsn');
  const timeline = propertyOf(value, 'timeline');
  const by = propertyOf(value, 'by');
  if (typeof upToId !== 'number' || typeof lsn !== 'string' || typeof timeline !== 'number') return null;
  if (!Array.isArray(writers) || !writers.every((writer) => typeof writer === 'string')) return null;
  if (by === undefined) return { upToId, writers, lsn, timeline };
  const reader = propertyOf(by, 'reader');
  const seq = propertyOf(by, 'seq');
  if (typeof reader !== 'string' || typeof seq !== 'number') return null;
  return { upToId, writers, lsn, timeline, by: { reader, seq } };
}
