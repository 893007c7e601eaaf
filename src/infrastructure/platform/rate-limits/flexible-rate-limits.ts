import type { Redis } from 'ioredis';
import { LRUCache } from 'lru-cache';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { type RateLimitPolicy, RateLimits, type RateLimitState } from '../../../application/platform/rate-limits.js';

export type RateLimitSettings = {
  /** Requests per minute for one API key. */
  perKeyPerMinute: number;
  /** Failed authentications per minute from one client address. */
  failedAuthenticationsPerMinute: number;
};

/**
 * Fixed one-minute windows from rate-limiter-flexible. With a Redis client the counters are
 * shared by every instance; if Redis stops answering, each instance falls back to counting in its
 * own memory (the insurance limiter) rather than failing requests or letting everything through.
 */
export class FlexibleRateLimits extends RateLimits {
  private readonly perKey: Limit;
  private readonly failedAuthentications: Limit;
  /** Set by connect(): the client was opened for these limits, and closes with them. */
  private ownsRedis = false;

  /** The limits on a Redis client of their own at `url`, closed when the app closes. */
  static async connect(settings: RateLimitSettings, url: string, onError: (error: Error) => void) {
    const redis = await connectRedis(url);
    redis.on('error', onError);
    const limits = new FlexibleRateLimits(settings, redis);
    limits.ownsRedis = true;
    return limits;
  }

  constructor(
    settings: RateLimitSettings,
    private readonly redis: Redis | null,
    now: () => number = Date.now,
  ) {
    super();
    this.perKey = new Limit('per-key', 'petstore:key', settings.perKeyPerMinute, redis, now);
    this.failedAuthentications = new Limit(
      'failed-auth',
      'petstore:auth-failure',
      settings.failedAuthenticationsPerMinute,
      redis,
      now,
    );
  }

  hitKey(caller: string): Promise<RateLimitState> {
    return this.perKey.hit(caller);
  }

  hitFailedAuthentication(address: string): Promise<RateLimitState> {
    return this.failedAuthentications.hit(address);
  }

  async failedAuthenticationBlock(address: string): Promise<RateLimitState | null> {
    const state = await this.failedAuthentications.peek(address);
    return state?.refused === true ? state : null;
  }

  knownFailedAuthenticationBlock(address: string): RateLimitState | null {
    return this.failedAuthentications.knownRefusal(address);
  }

  async degradation(): Promise<string | null> {
    if (this.redis === null) return null;
    try {
      await this.redis.ping();
      return null;
    } catch {
      return 'Redis does not answer: rate limits are counted per instance';
    }
  }

  /** Nest calls it on close. A client given to the constructor is its owner's to close. */
  onModuleDestroy(): void {
    if (this.ownsRedis) this.redis?.disconnect();
  }
}

/** RATE_LIMIT=off, for benchmarks. */
export class NoRateLimits extends RateLimits {
  hitKey(): Promise<null> {
    return Promise.resolve(null);
  }

  hitFailedAuthentication(): Promise<null> {
    return Promise.resolve(null);
  }

  failedAuthenticationBlock(): Promise<null> {
    return Promise.resolve(null);
  }

  knownFailedAuthenticationBlock(): null {
    return null;
  }

  degradation(): Promise<null> {
    return Promise.resolve(null);
  }
}

const WINDOW_SECONDS = 60;

/** Keys remembered as refused, at most: a flood from many addresses cannot grow memory. */
export const MAX_KNOWN_REFUSALS = 10_000;

/** One named limit: a quota per fixed one-minute window. */
class Limit {
  private readonly limiter: RateLimiterAbstract;
  /**
   * When each key seen refused is counted afresh. In a fixed window a refused key stays refused
   * to the window's end, so until then this instance can say so without a promise or a trip to
   * Redis: under a flood of wrong keys, the bulk of the requests.
   */
  private readonly refusedUntil: LRUCache<string, number>;

  constructor(
    private readonly policy: RateLimitPolicy,
    keyPrefix: string,
    private readonly quota: number,
    redis: Redis | null,
    private readonly now: () => number,
  ) {
    // Bounded by maxSize, one per entry, rather than by max, which allocates room for every
    // entry up front: memory that every instance would hold, flood or not (docs/performance.md).
    this.refusedUntil = new LRUCache({
      maxSize: MAX_KNOWN_REFUSALS,
      sizeCalculation: () => 1,
      ttlResolution: 0,
      perf: { now },
    });
    const options = { keyPrefix, points: quota, duration: WINDOW_SECONDS };
    this.limiter =
      redis === null
        ? new RateLimiterMemory(options)
        : new RateLimiterRedis({
            ...options,
            storeClient: redis,
            rejectIfRedisNotReady: true,
            insuranceLimiter: new RateLimiterMemory(options),
          });
  }

  async hit(key: string): Promise<RateLimitState> {
    try {
      return this.state(key, await this.limiter.consume(key), false);
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) return this.state(key, rejection, true);
      throw rejection;
    }
  }

  /** The counter as it stands, without counting; null when it has not started or cannot be read. */
  async peek(key: string): Promise<RateLimitState | null> {
    const counter = await this.limiter.get(key).catch(() => null);
    return counter === null ? null : this.state(key, counter, counter.remainingPoints <= 0);
  }

  /** The refused state while this instance knows the key refused (hit or peek said so), else null. */
  knownRefusal(key: string): RateLimitState | null {
    const until = this.refusedUntil.get(key);
    const msBeforeNext = until === undefined ? 0 : until - this.now();
    return msBeforeNext > 0 ? this.stateOf(0, msBeforeNext, true) : null;
  }

  private state(key: string, counter: RateLimiterRes, refused: boolean): RateLimitState {
    if (refused && counter.msBeforeNext > 0) {
      this.refusedUntil.set(key, this.now() + counter.msBeforeNext, { ttl: counter.msBeforeNext });
    }
    return this.stateOf(counter.remainingPoints, counter.msBeforeNext, refused);
  }

  private stateOf(remainingPoints: number, msBeforeNext: number, refused: boolean): RateLimitState {
    return {
      policy: this.policy,
      quota: this.quota,
      windowSeconds: WINDOW_SECONDS,
      remaining: Math.max(0, remainingPoints),
      resetSeconds: Math.max(1, Math.ceil(msBeforeNext / 1000)),
      refused,
    };
  }
}

/**
 * A Redis client that fails fast instead of queueing commands while Redis is away, and gives up
 * on a command that gets no answer (a Redis that hangs keeps its connection open): a request then
 * waits at most REDIS_COMMAND_TIMEOUT_MS before its counting falls back to memory.
 */
export const REDIS_COMMAND_TIMEOUT_MS = 250;

export async function connectRedis(url: string): Promise<Redis> {
  // Loaded here, not at start-up: an instance without REDIS_URL never holds the driver.
  const { Redis } = await import('ioredis');
  return new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
    lazyConnect: false,
  });
}
