// What the command-line entry points (keys.ts, migrate.ts) share: the configuration read as the
// service reads it, the database the service uses, and one line on stderr and exit code 1 when
// anything fails.
import type { DataSource } from 'typeorm';
import { type Config, ConfigError, loadConfig, readEnvFile } from './infrastructure/platform/config.js';
import { openDatabaseServer } from './infrastructure/platform/database/database-server.js';
import { openDataSource } from './infrastructure/platform/database/database.js';
import { dataSourceOptions } from './infrastructure/schema/data-source-options.js';

/** Runs a command to its exit code; a failure is printed as one line (no stack: the operator acts on it as it is). */
export async function runCommand(command: () => Promise<number>): Promise<never> {
  readEnvFile();
  let exitCode = 1;
  try {
    exitCode = await command();
  } catch (error) {
    const prefix = error instanceof ConfigError ? 'Configuration error: ' : '';
    process.stderr.write(`${prefix}${error instanceof Error ? error.message : String(error)}\n`);
  }
  process.exit(exitCode);
}

/**
 * The service's database for one command, closed after it: DATABASE_URL's, or the embedded
 * server in DATA_DIR, attached to when a running service holds it rather than refused.
 */
export async function withDatabase<T>(
  options: { migrationsRun: boolean },
  use: (dataSource: DataSource, config: Config) => Promise<T>,
): Promise<T> {
  const config = loadConfig();
  const server = await openDatabaseServer(config, { attachToRunning: true });
  try {
    const dataSource = await openDataSource({ ...dataSourceOptions(server.url), migrationsRun: options.migrationsRun });
    try {
      return await use(dataSource, config);
    } finally {
      await dataSource.destroy();
    }
  } finally {
    await server.stop();
  }
}
