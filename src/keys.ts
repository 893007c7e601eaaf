// Entry point of `npm run keys`: wires the stored keys to the command (a composition root, like main.ts).
import { loadConfig } from './config.js';
import { openDatabase } from './infrastructure/database.js';
import { TypeOrmApiKeys } from './infrastructure/typeorm-api-keys.js';
import { runKeysCommand } from './interface/cli/keys.js';

const config = loadConfig();
// Beside a running service on the embedded database, use its server rather than refuse.
const database = await openDatabase(config, { attachToRunning: true });
try {
  process.exitCode = await runKeysCommand(process.argv.slice(2), new TypeOrmApiKeys(database.dataSource, config.apiKeys), (line) =>
    process.stdout.write(`${line}\n`),
  );
} finally {
  await database.close();
}
