// What the command-line entry points (keys.ts, migrate.ts) and the TypeORM CLI's ormconfig.ts
// share: the configuration read as the service reads it, the database the service uses, and for
// the commands one line on stderr and exit code 1 when anything fails.
import type { DataSource } from 'typeorm';
import { type Config, ConfigError, loadConfig, readEnvFile } from './infrastructure/platform/config.js';
import { type DatabaseServer, openDatabaseServer } from './infrastructure/platform/database/database-server.js';
import { openDataSource } from './infrastructure/platform/database/database.js';
import { dataSourceOptions } from './infrastructure/schema/data-source-options.js';

/** Runs a command to its exit code; a failure is printed as one line (no stack: the operator acts on it as it is). */
export async function runCommand(command: () => Promise<number>): Promise<never> {
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
 * The start-up of every tool that runs beside the service: `.env` read, the configuration checked,
 * and the service's database server: DATABASE_URL's, or the embedded one in DATA_DIR, attached to
 * when a running service holds it rather than refused. Stop the server when done.
 */
export async function openServiceDatabase(): Promise<{ config: Config; server: DatabaseServer }> {
  readEnvFile();
  const config = loadConfig();
  return { config, server: await openDatabaseServer(config, { attachToRunning: true }) };
}

/** The service's database for one command, closed after it. */
export async function withDatabase<T>(
  options: { migrationsRun: boolean },
  use: (dataSource: DataSource, config: Config) => Promise<T>,
): Promise<T> {
  const { config, server } = await openServiceDatabase();
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
