// Entry point of `npm run db:restore -- FILE`: the service's database (DATABASE_URL's, or the
// embedded one in DATA_DIR, attached to while a service runs on it) brought to the migrations the
// service has, then every table's rows replaced by the backup's (docs/operations.md).
import { openServiceDatabase, runCommand } from './cli.js';
import { openDataSource } from './infrastructure/platform/database/database.js';
import { PgDatabaseBackups } from './infrastructure/platform/database/logical-backups.js';
import { dataSourceOptions } from './infrastructure/schema/data-source-options.js';
import { runRestoreCommand } from './interface/cli/backup-cli.js';

await runCommand(async () => {
  const { server } = await openServiceDatabase();
  try {
    // A new DATA_DIR has no tables yet: the migrations first, as an instance runs them at start.
    await (await openDataSource({ ...dataSourceOptions(server.url), migrationsRun: true })).destroy();
    return await runRestoreCommand(process.argv.slice(2), new PgDatabaseBackups(server.url), (line) =>
      process.stdout.write(`${line}\n`),
    );
  } finally {
    await server.stop();
  }
});
