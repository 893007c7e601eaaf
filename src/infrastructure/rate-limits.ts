import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { RateLimits } from '../application/rate-limits.js';

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
  private readonly perKey: RateLimiterAbstract;
  private readonly failedAuthentications: RateLimiterAbstract;

  constructor(
    settings: RateLimitSettings,
    private readonly redis: Redis | null,
  ) {
    super();
    this.perKey = limiter('petstore:key', settings.perKeyPerMinute, redis);
    this.failedAuthentications = limiter('petstore:auth-failure', settings.failedAuthenticationsPerMinute, redis);
  }

  hitKey(caller: string): Promise<number | null> {
    return hit(this.perKey, caller);
  }

  hitFailedAuthentication(address: string): Promise<number | null> {
    return hit(this.failedAuthentications, address);
  }

  async failedAuthenticationBlock(address: string): Promise<number | null> {
    const state = await this.failedAuthentications.get(address).catch(() => null);
    return state !== null && state.remainingPoints <= 0 ? Math.max(1, Math.ceil(state.msBeforeNext / 1000)) : null;
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
}

/** RATE_LIMIT=off, for benchmarks. */
export class NoRateLimits extends RateLimits {
  async hitKey(): Promise<null> {
    return null;
  }

  async hitFailedAuthentication(): Promise<null> {
    return null;
  }

  async failedAuthenticationBlock(): Promise<null> {
    return null;
  }

  async degradation(): Promise<null> {
    return null;
  }
}

function limiter(keyPrefix: string, points: number, redis: Redis | null): RateLimiterAbstract {
  const options = { keyPrefix, points, duration: 60 };
  if (redis === null) return new RateLimiterMemory(options);
  return new RateLimiterRedis({
    ...options,
    storeClient: redis,
    rejectIfRedisNotReady: true,
    insuranceLimiter: new RateLimiterMemory(options),
  });
}

async function hit(limiter: RateLimiterAbstract, key: string): Promise<number | null> {
  try {
    await limiter.consume(key);
    return null;
  } catch (rejection) {
    if (rejection instanceof RateLimiterRes) return Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
    throw rejection;
  }
}

/**
 * A Redis client that fails fast instead of queueing commands while Redis is away, and gives up
 * on a command that gets no answer (a Redis that hangs keeps its connection open): a request then
 * waits at most REDIS_COMMAND_TIMEOUT_MS before its counting falls back to memory.
 */
export const REDIS_COMMAND_TIMEOUT_MS = 250;

export function connectRedis(url: string): Redis {
  return new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
    lazyConnect: false,
  });
}
