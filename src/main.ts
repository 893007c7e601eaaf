import { randomBytes } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { createApp } from './app.js';
import { ApiKeys } from './application/api-keys.js';
import { ConfigError, loadConfig } from './config.js';
import { openDatabase } from './infrastructure/database.js';
import { issueFirstRunKey } from './interface/cli/first-run-key.js';
import { connectRedis, FlexibleRateLimits, NoRateLimits } from './infrastructure/rate-limits.js';

const logger = new Logger('Main');

async function main(): Promise<void> {
  const config = loadConfig();
  const database = await openDatabase(config);
  const redis = config.rateLimit !== null && config.redisUrl !== null ? connectRedis(config.redisUrl) : null;
  redis?.on('error', (error: Error) => logger.warn(`Redis: ${error.message}; rate limits are counted per process meanwhile`));
  const app = await createApp({
    dataSource: database.dataSource,
    environmentKeys: config.apiKeys,
    apiKeyCache: { seconds: config.apiKeyCacheSeconds, maxEntries: 10_000 },
    rateLimits: config.rateLimit === null ? new NoRateLimits() : new FlexibleRateLimits(config.rateLimit, redis),
    cursorSecret: config.cursorSecret ?? randomBytes(32).toString('hex'),
    servers: { production: config.publicBaseUrl, staging: config.stagingBaseUrl },
  });
  await issueFirstRunKey(app.get(ApiKeys), (text) => process.stdout.write(text));
  await app.listen(config.port, config.host);
  const where = config.databaseUrl === null ? `embedded PostgreSQL in ${config.dataDir}` : 'DATABASE_URL';
  logger.log(`Pet Store listening on http://${config.host}:${config.port} (database: ${where}); docs at /docs`);

  const shutdown = async (signal: string): Promise<void> => {
    logger.log(`${signal}: shutting down`);
    await app.close();
    await database.close();
    redis?.disconnect();
    process.exit(0);
  };
  process.once('SIGTERM', (signal) => void shutdown(signal));
  process.once('SIGINT', (signal) => void shutdown(signal));
}

main().catch((error: unknown) => {
  // Configuration errors are one clear line; anything else keeps its stack for the operator.
  if (error instanceof ConfigError) console.error(`Configuration error: ${error.message}`);
  else logger.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exit(1);
});
