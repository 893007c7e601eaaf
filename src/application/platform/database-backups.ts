/** A table of the service's database and the rows a backup holds of it. */
export type TableRows = { table: string; rows: number };

export type BackupWritten = { file: string; tables: TableRows[]; migrations: number };

/** What a restore put back: the tables, and the value each id sequence continues above. */
export type BackupRestored = { tables: TableRows[]; sequences: { sequence: string; above: number }[] };

/** A backup file that cannot be restored here: why, in words the operator acts on. */
export class BackupRefusedError extends Error {
  override name = 'BackupRefusedError';
}

/**
 * Logical backups of the service's whole database (every table its migrations made, the migrations
 * table included), written to and restored from a file: `npm run db:backup`, `npm run db:restore`.
 */
export abstract class DatabaseBackups {
  abstract write(file: string): Promise<BackupWritten>;
  /** Replaces every table's rows with the file's, in one transaction; ids continue above every id handed out. */
  abstract restore(file: string): Promise<BackupRestored>;
}
