import { randomBytes } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { createApp } from './app.js';
import { ConfigError, loadConfig } from './config.js';
import { openDatabase } from './infrastructure/database.js';

const logger = new Logger('Main');

async function main(): Promise<void> {
  const config = loadConfig();
  const database = await openDatabase(config);
  const apiKeys = config.apiKeys.length > 0 ? config.apiKeys : [issueFirstRunKey()];
  const app = await createApp({
    dataSource: database.dataSource,
    apiKeys,
    cursorSecret: config.cursorSecret ?? randomBytes(32).toString('hex'),
    servers: { production: config.publicBaseUrl, staging: config.stagingBaseUrl },
  });
  await app.listen(config.port, config.host);
  const where = config.databaseUrl === null ? `embedded PostgreSQL in ${config.dataDir}` : 'DATABASE_URL';
  logger.log(`Pet Store listening on http://${config.host}:${config.port} (database: ${where}); docs at /docs`);

  const shutdown = async (signal: string): Promise<void> => {
    logger.log(`${signal}: shutting down`);
    await app.close();
    await database.close();
    process.exit(0);
  };
  process.once('SIGTERM', (signal) => void shutdown(signal));
  process.once('SIGINT', (signal) => void shutdown(signal));
}

/** No API_KEYS: make one so that a first run works, and show it once (on stdout, not in the log). */
function issueFirstRunKey(): string {
  const key = randomBytes(24).toString('base64url');
  process.stdout.write(`No API_KEYS set: this run accepts the key below (shown once).\n  API key: ${key}\n`);
  return key;
}

main().catch((error: unknown) => {
  // Configuration errors are one clear line; anything else keeps its stack for the operator.
  if (error instanceof ConfigError) console.error(`Configuration error: ${error.message}`);
  else logger.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exit(1);
});
