// Entry point of `npm run migration:run` and `npm run migration:revert` (`--revert`), a composition
// root like main.ts: the pending migrations applied as an instance applies them at start, or the last
// one undone, under the instances' lock, so that instances starting meanwhile wait instead of failing
// on "already exists" (TypeORM's own commands take no lock). No limit on a statement: this is where a
// migration too long for a start is run (docs/production.md).
import { ConfigError, loadConfig, readEnvFile } from './infrastructure/platform/config.js';
import { openDatabaseServer } from './infrastructure/platform/database/database-server.js';
import {
  openDataSource,
  revertLastMigrationInTurn,
  runMigrationsInTurn,
} from './infrastructure/platform/database/database.js';
import { dataSourceOptions } from './infrastructure/schema/data-source-options.js';

readEnvFile();
let exitCode = 1;
try {
  const revert = commandIsRevert(process.argv.slice(2));
  // Beside a running service on the embedded database, use its server rather than refuse.
  const server = await openDatabaseServer(loadConfig(), { attachToRunning: true });
  try {
    const dataSource = await openDataSource(dataSourceOptions(server.url, server.schema));
    try {
      if (revert) {
        const reverted = await revertLastMigrationInTurn(dataSource);
        process.stdout.write(reverted === null ? 'No migration to revert.\n' : `Reverted ${reverted}\n`);
      } else {
        const applied = await runMigrationsInTurn(dataSource, 0);
        const lines = applied.length === 0 ? ['No migration pending.'] : applied.map((name) => `Applied ${name}`);
        process.stdout.write(`${lines.join('\n')}\n`);
      }
      exitCode = 0;
    } finally {
      await dataSource.destroy();
    }
  } finally {
    await server.stop();
  }
} catch (error) {
  process.stderr.write(
    `${error instanceof ConfigError ? 'Configuration error: ' : ''}${error instanceof Error ? error.message : String(error)}\n`,
  );
}
process.exit(exitCode);

function commandIsRevert(args: string[]): boolean {
  if (args.length === 0) return false;
  if (args.length === 1 && args[0] === '--revert') return true;
  throw new Error(`Unknown arguments: ${args.join(' ')} (usage: node dist/src/migrate.js [--revert])`);
}
