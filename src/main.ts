import { Logger } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { ApiKeys } from './application/access/api-keys.js';
import { type Config, ConfigError, loadConfig, petstoreConfig, readEnvFile } from './infrastructure/platform/config.js';
import { DatabaseServer } from './infrastructure/platform/database/database-server.js';
import { StartupError } from './infrastructure/platform/database/wait-for-database.js';
import { EmbeddedPostgresError } from './infrastructure/platform/database/embedded-postgres.js';
import { announceFirstRunKey } from './interface/cli/first-run-key.js';
import { flushLog, printOnStdout, startupLogger } from './interface/http/platform/logging.js';
import { drain } from './interface/http/platform/shutdown.js';
import { stopTracing } from './infrastructure/platform/observability/tracing.js';
import { propertyOf } from './infrastructure/platform/property-of.js';

const logger = new Logger('Main');

async function main(): Promise<void> {
  readEnvFile();
  // Only now: app.module.ts checks the environment as it loads (ConfigModule.forRoot's validate),
  // and puts the defaults in process.env, where they would hide what .env sets.
  const { createApp } = await import('./app.js');
  const app = await createApp();
  const config = app.get<Config>(petstoreConfig.KEY);
  const database = app.get(DatabaseServer);
  // Signals are handled before the port opens: an orchestrator may stop an instance as soon as it
  // answers, and on a busy machine a SIGTERM sent once the port accepted a connection could arrive
  // before the code after listen() ran, and end the process by Node's default action (no drain,
  // its embedded PostgreSQL left running).
  let announced: Promise<void> = Promise.resolve();
  let stopping = false;
  const shutdown = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    logger.log(`${signal}: draining, at most ${config.shutdownDelaySeconds + config.shutdownTimeoutSeconds} s`);
    const { drainedInMs, timedOut } = await drain(app, {
      delayMs: config.shutdownDelaySeconds * 1000,
      timeoutMs: config.shutdownTimeoutSeconds * 1000,
    });
    // A first-run key being issued is printed before the process ends: it is shown only once.
    await announced.catch(() => undefined);
    await database.stop();
    await stopTracing(2000, (line) => logger.warn(line));
    logger.log(`stopped: drained in ${drainedInMs} ms${timedOut ? ', cutting the connections still open' : ''}`);
    app.flushLogs();
    await flushLog();
    process.exit(0);
  };
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => void shutdown(signal));
  await listen(app, config);
  announced = announceStart(app, config);
  await announced;
}

/** The listening line, then the first-run key banner (through the log's buffer, so in that order). */
async function announceStart(app: NestExpressApplication, config: Config): Promise<void> {
  const where = config.databaseUrl === null ? `embedded PostgreSQL in ${config.dataDir}` : 'DATABASE_URL';
  logger.log(`Pet Store listening on http://${config.host}:${config.port} (database: ${where}); docs at /docs`);
  // Only now: a start that failed has issued nothing, so no one-time key is ever lost.
  await announceFirstRunKey(app.get(ApiKeys), {
    embedded: config.databaseUrl === null,
    dataDir: config.dataDir,
    log: (line) => logger.warn(line),
    print: printOnStdout,
  });
  await flushLog();
}

async function listen(app: NestExpressApplication, config: Config): Promise<void> {
  try {
    await app.listen(config.port, config.host);
  } catch (error) {
    const code = propertyOf(error, 'code');
    const problem =
      code === 'EADDRINUSE'
        ? `Port ${config.port} is in use on ${config.host}: stop the other process or set PORT`
        : code === 'EACCES'
          ? `Not allowed to listen on port ${config.port}: choose a PORT above 1023`
          : code === 'ENOTFOUND' || code === 'EAI_AGAIN'
            ? `HOST ${config.host} cannot be resolved: set HOST to an address of this machine (0.0.0.0 for all)`
            : code === 'EADDRNOTAVAIL'
              ? `HOST ${config.host} is not an address of this machine: set HOST to one (0.0.0.0 for all)`
              : null;
    await app.close();
    await app.get(DatabaseServer).stop();
    throw problem === null ? error : new StartupError(problem);
  }
}

/** Why the start failed, as one line in the configured log format, then exit code 1. */
function failed(error: unknown): never {
  const known = error instanceof ConfigError || error instanceof StartupError || error instanceof EmbeddedPostgresError;
  const line =
    error instanceof ConfigError
      ? `Configuration error: ${error.message}`
      : error instanceof Error
        ? `Start failed: ${error.message.split('\n')[0]}`
        : String(error);
  // The format the configuration chose; JSON when LOG_FORMAT itself is what is wrong.
  const pretty = error instanceof ConfigError ? error.pretty : configuredLogIsPretty();
  // The stack only for what we did not foresee: the operator can act on the rest as it is.
  if (pretty) process.stderr.write(`${line}\n`);
  else
    startupLogger({ level: 'info', pretty }, 2).fatal(known || !(error instanceof Error) ? {} : { err: error }, line);
  process.exit(1);
}

/**
 * The log format of a start that failed after ConfigModule had checked the environment: the app
 * that held the configuration is gone, so it is read once more, for this line only.
 */
function configuredLogIsPretty(): boolean {
  try {
    return loadConfig(process.env, process.stdout.isTTY).log.pretty;
  } catch (error) {
    if (error instanceof ConfigError) return error.pretty;
    throw error;
  }
}

main().catch(failed);
