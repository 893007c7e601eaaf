// Entry point of `npm run keys`: wires the stored keys to the command (a composition root, like main.ts).
import { ConfigError, loadConfig, readEnvFile } from './infrastructure/platform/config.js';
import { dataSourceOptions } from './infrastructure/schema/data-source-options.js';
import { openDatabaseServer } from './infrastructure/platform/database/database-server.js';
import { openDataSource } from './infrastructure/platform/database/database.js';
import { ApiKeyRecord } from './infrastructure/access/api-key.record.js';
import { TypeOrmApiKeys } from './infrastructure/access/typeorm-api-keys.js';
import { runKeysCommand } from './interface/cli/keys-cli.js';

readEnvFile();
let exitCode = 1;
try {
  const config = loadConfig();
  // Beside a running service on the embedded database, use its server rather than refuse.
  const server = await openDatabaseServer(config, { attachToRunning: true });
  const dataSource = await openDataSource({ ...dataSourceOptions(server.url), migrationsRun: true });
  try {
    exitCode = await runKeysCommand(
      process.argv.slice(2),
      new TypeOrmApiKeys(dataSource.getRepository(ApiKeyRecord), config.apiKeys),
      (line) => process.stdout.write(`${line}\n`),
    );
  } finally {
    await dataSource.destroy();
    await server.stop();
  }
} catch (error) {
  process.stderr.write(
    `${error instanceof ConfigError ? 'Configuration error: ' : ''}${error instanceof Error ? error.message : String(error)}\n`,
  );
}
process.exit(exitCode);
