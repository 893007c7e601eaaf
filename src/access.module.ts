import { Logger, Module } from '@nestjs/common';
import { getRepositoryToken, TypeOrmModule } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { ApiKeys } from './application/access/api-keys.js';
import { RateLimits } from './application/platform/rate-limits.js';
import { ApiKeyRecord } from './infrastructure/access/api-key.record.js';
import { TypeOrmApiKeys } from './infrastructure/access/typeorm-api-keys.js';
import { type Config, petstoreConfig } from './infrastructure/platform/config.js';
import { FlexibleRateLimits, NoRateLimits } from './infrastructure/platform/rate-limits/flexible-rate-limits.js';
import { BearerKeyMiddleware } from './interface/http/access/bearer-key.middleware.js';

const CONFIG = petstoreConfig.KEY;

/**
 * Who may call, and how often: the API keys (stored as hashes, and API_KEYS), the bearer-key
 * middleware that app.ts puts in front of every path under /v1, and the rate limits it applies (per
 * key, and failed authentications per client address; in Redis when REDIS_URL is set).
 */
@Module({
  imports: [TypeOrmModule.forFeature([ApiKeyRecord])],
  providers: [
    {
      provide: ApiKeys,
      inject: [getRepositoryToken(ApiKeyRecord), CONFIG],
      useFactory: (records: Repository<ApiKeyRecord>, config: Config) =>
        new TypeOrmApiKeys(records, config.apiKeys, { seconds: config.apiKeyCacheSeconds, maxEntries: 10_000 }),
    },
    { provide: RateLimits, inject: [CONFIG], useFactory: rateLimitsFor },
    BearerKeyMiddleware,
  ],
  // What HealthModule injects. app.ts and main.ts take BearerKeyMiddleware and ApiKeys from the app.
  exports: [RateLimits],
})
export class AccessModule {}

async function rateLimitsFor(config: Config): Promise<RateLimits> {
  if (config.rateLimit === null) return new NoRateLimits();
  if (config.redisUrl === null) return new FlexibleRateLimits(config.rateLimit, null);
  const logger = new Logger('Redis');
  // Closed by FlexibleRateLimits when the app closes.
  return FlexibleRateLimits.connect(config.rateLimit, config.redisUrl, (error) =>
    logger.warn(`${error.message}; rate limits are counted per process meanwhile`),
  );
}
