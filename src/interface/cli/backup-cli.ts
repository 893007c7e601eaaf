import {
  BackupRefusedError,
  type DatabaseBackups,
  type TableRows,
} from '../../application/platform/database-backups.js';

export const BACKUP_USAGE = `Usage:
  npm run db:backup [-- FILE]   every table of the service's database into FILE (default: DATA_DIR/backups/petstore-<time>.backup)
  npm run db:restore -- FILE    every table's rows replaced by FILE's, in one transaction; ids continue above every id handed out`;

const rowsOf = (tables: TableRows[]): string => tables.map(({ table, rows }) => `${table} ${rows}`).join(', ');

/** `npm run db:backup`: the file to write (an argument, or a new name under `backupsDir`). Returns the exit code. */
export async function runBackupCommand(
  args: string[],
  backups: DatabaseBackups,
  backupsDir: string,
  now: Date,
  print: (line: string) => void,
): Promise<number> {
  if (args.length > 1 || args[0]?.startsWith('-')) return usage(print, `unknown arguments: ${args.join(' ')}`);
  const file = args[0] ?? `${backupsDir}/petstore-${now.toISOString().replace(/[:.]/g, '-')}.backup`;
  return refusedOr(print, async () => {
    const written = await backups.write(file);
    print(
      `Backed up ${written.tables.length} tables after ${written.migrations} migrations (${rowsOf(written.tables)}) to ${written.file}`,
    );
    print("It holds the API keys' hashes and the cursors' signing secret: keep it as private as the database.");
    return 0;
  });
}

/** `npm run db:restore -- FILE`. Returns the exit code. */
export async function runRestoreCommand(
  args: string[],
  backups: DatabaseBackups,
  print: (line: string) => void,
): Promise<number> {
  const [file] = args;
  if (args.length !== 1 || file === undefined || file.startsWith('-'))
    return usage(print, args.length === 0 ? 'no backup file given' : `unknown arguments: ${args.join(' ')}`);
  return refusedOr(print, async () => {
    const restored = await backups.restore(file);
    print(`Restored ${file}: ${rowsOf(restored.tables)}`);
    for (const { sequence, above } of restored.sequences)
      print(above > 0 ? `${sequence} continues above ${above}` : `${sequence}: no id handed out yet`);
    return 0;
  });
}

async function refusedOr(print: (line: string) => void, command: () => Promise<number>): Promise<number> {
  try {
    return await command();
  } catch (error) {
    if (!(error instanceof BackupRefusedError)) throw error;
    print(`Refused: ${error.message}`);
    return 3;
  }
}

function usage(print: (line: string) => void, problem: string): number {
  print(`Error: ${problem}`);
  print(BACKUP_USAGE);
  return 2;
}
