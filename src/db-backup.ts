// Entry point of `npm run db:backup`: a logical backup of the service's database, DATABASE_URL's
// or the embedded one in DATA_DIR (attached to while a service runs on it), as `npm run keys` reaches it.
import path from 'node:path';
import { openServiceDatabase, runCommand } from './cli.js';
import { PgDatabaseBackups } from './infrastructure/platform/database/logical-backups.js';
import { runBackupCommand } from './interface/cli/backup-cli.js';

await runCommand(async () => {
  const { config, server } = await openServiceDatabase();
  try {
    return await runBackupCommand(
      process.argv.slice(2),
      new PgDatabaseBackups(server.url),
      path.join(config.dataDir, 'backups'),
      new Date(),
      (line) => process.stdout.write(`${line}\n`),
    );
  } finally {
    await server.stop();
  }
});
