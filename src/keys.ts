// Entry point of `npm run keys`: wires the stored keys to the command (a composition root, like main.ts).
import { runCommand, withDatabase } from './cli.js';
import { ApiKeyRecord } from './infrastructure/access/api-key.record.js';
import { TypeOrmApiKeys } from './infrastructure/access/typeorm-api-keys.js';
import { runKeysCommand } from './interface/cli/keys-cli.js';

await runCommand(() =>
  withDatabase({ migrationsRun: true }, (dataSource, config) =>
    runKeysCommand(
      process.argv.slice(2),
      new TypeOrmApiKeys(dataSource.getRepository(ApiKeyRecord), config.apiKeys),
      (line) => process.stdout.write(`${line}\n`),
    ),
  ),
);
