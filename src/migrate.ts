// Entry point of `npm run migration:run` and `npm run migration:revert` (`--revert`), a composition
// root like main.ts: the pending migrations applied as an instance applies them at start, or the last
// one undone, under the instances' lock, so that instances starting meanwhile wait instead of failing
// on "already exists" (TypeORM's own commands take no lock). No limit on a statement: this is where a
// migration too long for a start is run (docs/production.md).
import { parseArgs } from 'node:util';
import { runCommand, withDatabase } from './cli.js';
import { revertLastMigrationInTurn, runMigrationsInTurn } from './infrastructure/platform/database/database.js';

await runCommand(async () => {
  const revert = commandIsRevert(process.argv.slice(2));
  const lines = await withDatabase({ migrationsRun: false }, async (dataSource) => {
    if (revert) {
      const reverted = await revertLastMigrationInTurn(dataSource);
      return [reverted === null ? 'No migration to revert.' : `Reverted ${reverted}`];
    }
    const applied = await runMigrationsInTurn(dataSource, 0);
    return applied.length === 0 ? ['No migration pending.'] : applied.map((name) => `Applied ${name}`);
  });
  process.stdout.write(`${lines.join('\n')}\n`);
  return 0;
});

/** `--revert` or nothing, read by Node's own parser; anything else is refused before any database is opened. */
function commandIsRevert(args: string[]): boolean {
  try {
    return parseArgs({ args, options: { revert: { type: 'boolean' } }, strict: true }).values.revert === true;
  } catch (error) {
    throw new Error(`Unknown arguments: ${args.join(' ')} (usage: node dist/src/migrate.js [--revert])`, {
      cause: error,
    });
  }
}
