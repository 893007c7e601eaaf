import { createReadStream, createWriteStream, existsSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { finished, pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';
import {
  BackupRefusedError,
  type BackupRestored,
  type BackupWritten,
  DatabaseBackups,
  type TableRows,
} from '../../../application/platform/database-backups.js';

/**
 * `npm run db:backup` and `npm run db:restore` (docs/operations.md, "The embedded database"): a
 * logical backup of every table of the service's schema, written by the service itself with COPY
 * (the embedded server ships no pg_dump, and Debian's pg_dump 15 refuses its PostgreSQL 17).
 *
 * The file: a first line naming the format, a JSON line (the migrations applied, each table's
 * columns, each id sequence's value), then each table's rows in COPY's text format, parents before
 * the tables whose foreign keys point at them, each ended by a line `\.` (a line COPY's text output
 * never holds: it writes a backslash in data as two), then a JSON line with each table's row count,
 * which a restore checks before it commits.
 */
const FORMAT = 'petstore logical backup, format 1';

type TableShape = { table: string; columns: string[] };
type SequenceOfColumn = { table: string; column: string; sequence: string; lastValue: string | null };
type Header = {
  createdAt: string;
  server: string;
  migrations: string[];
  tables: TableShape[];
  sequences: SequenceOfColumn[];
};
type Trailer = { rows: Record<string, number> };
type TriggerState = { table: string; trigger: string; enabled: 'O' | 'D' | 'R' | 'A' };

/** How long a restore waits for the tables' locks: a running service's transactions are short. */
const LOCK_WAIT = '30s';
const quote = (identifier: string): string => pg.escapeIdentifier(identifier);
const columnList = (shape: TableShape): string => shape.columns.map(quote).join(', ');

export class PgDatabaseBackups extends DatabaseBackups {
  /** `schema`: tests only, the schema a test run owns (else the connection's current schema). */
  constructor(
    private readonly url: string,
    private readonly schema?: string,
  ) {
    super();
  }

  async write(file: string): Promise<BackupWritten> {
    if (existsSync(file)) throw new BackupRefusedError(`${file} exists already: name another file`);
    const client = await this.connect();
    const partial = `${file}.partial-${process.pid}`;
    try {
      // One snapshot for every table; sequences are read outside snapshots, at or above every id in it.
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      const header: Header = {
        createdAt: new Date().toISOString(),
        server: (await client.query<{ version: string }>('SELECT version()')).rows[0]?.version ?? '',
        migrations: await appliedMigrations(client),
        tables: await tablesParentsFirst(client),
        sequences: await sequencesOfColumns(client),
      };
      if (header.tables.length === 0)
        throw new BackupRefusedError(
          'the database holds no table yet: nothing to back up (the service, or npm run migration:run, makes them)',
        );
      await mkdir(path.dirname(path.resolve(file)), { recursive: true });
      // Key hashes and the cursors' signing secret are in it: for its owner's eyes only.
      const out = createWriteStream(partial, { mode: 0o600, flags: 'wx' });
      const rows: TableRows[] = [];
      try {
        out.write(`${FORMAT}\n${JSON.stringify(header)}\n`);
        for (const shape of header.tables) {
          const copy = client.query(copyTo(`COPY ${quote(shape.table)} (${columnList(shape)}) TO STDOUT`));
          for await (const chunk of copy) if (!out.write(chunk)) await once(out, 'drain');
          out.write('\\.\n');
          rows.push({ table: shape.table, rows: copy.rowCount });
        }
        const trailer: Trailer = { rows: Object.fromEntries(rows.map(({ table, rows: count }) => [table, count])) };
        out.end(`${JSON.stringify(trailer)}\n`);
        await finished(out);
      } catch (error) {
        out.destroy();
        throw error;
      }
      await client.query('COMMIT');
      // Renamed once whole: a backup interrupted half-way never looks like one.
      await rename(partial, file);
      return { file, tables: rows, migrations: header.migrations.length };
    } finally {
      await rm(partial, { force: true });
      await client.end();
    }
  }

  async restore(file: string): Promise<BackupRestored> {
    if (!existsSync(file)) throw new BackupRefusedError(`${file} does not exist`);
    const reader = createInterface({ input: createReadStream(file), crlfDelay: Infinity });
    const lines = reader[Symbol.asyncIterator]();
    const nextLine = async (): Promise<string> => {
      const next = await lines.next();
      if (next.done === true) throw new BackupRefusedError(`${file} ends before its last table: it is not whole`);
      return next.value;
    };
    if ((await nextLine()) !== FORMAT)
      throw new BackupRefusedError(`${file} is not a backup written by npm run db:backup`);
    const header = JSON.parse(await nextLine()) as Header;

    const client = await this.connect();
    try {
      // One transaction: a running service sees the old rows or the restored ones, never a table
      // in between nor a trigger disabled; its requests wait for the locks meanwhile.
      await client.query('BEGIN');
      await client.query(`SET LOCAL lock_timeout = '${LOCK_WAIT}'`);
      await refuseAnotherSchema(client, header);
      const tables = header.tables.map((shape) => shape.table);
      await client.query(`LOCK TABLE ${tables.map(quote).join(', ')} IN ACCESS EXCLUSIVE MODE`);
      // Read under the locks: no id is drawn after this.
      const live = await sequencesOfColumns(client);
      const triggers = await triggerStates(client);
      for (const table of new Set(triggers.map((trigger) => trigger.table)))
        await client.query(`ALTER TABLE ${quote(table)} DISABLE TRIGGER USER`);
      await client.query(`TRUNCATE ${tables.map(quote).join(', ')}`);

      const restored: TableRows[] = [];
      for (const shape of header.tables) {
        const copy = client.query(copyFrom(`COPY ${quote(shape.table)} (${columnList(shape)}) FROM STDIN`));
        await pipeline(Readable.from(rowsOfTable(nextLine)), copy);
        restored.push({ table: shape.table, rows: copy.rowCount });
      }
      const trailer = JSON.parse(await nextLine()) as Trailer;
      const short = restored.filter(({ table, rows }) => trailer.rows[table] !== rows);
      if (short.length > 0)
        throw new BackupRefusedError(
          `${file} does not hold the rows it was written with (${short.map(({ table, rows }) => `${table}: ${rows} of ${trailer.rows[table]}`).join(', ')}): nothing was restored`,
        );

      const sequences = [];
      for (const sequence of live) {
        const above = await continueAbove(client, sequence, header.sequences);
        sequences.push({ sequence: sequence.sequence, above: Number(above) });
      }
      // Each trigger back as it was before the restore (ENABLE ALWAYS, REPLICA, disabled or not).
      for (const { table, trigger, enabled } of triggers)
        await client.query(`ALTER TABLE ${quote(table)} ${TRIGGER_STATE[enabled]} TRIGGER ${quote(trigger)}`);
      await client.query('COMMIT');
      return { tables: restored, sequences };
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      await client.end();
      reader.close();
    }
  }

  private async connect(): Promise<pg.Client> {
    const client = new pg.Client({
      connectionString: this.url,
      connectionTimeoutMillis: 10_000,
      application_name: 'petstore-backup',
      // No limit on a statement: a large table's COPY takes as long as it takes.
      statement_timeout: 0,
      ...(this.schema === undefined ? {} : { options: `-c search_path=${this.schema}` }),
    });
    await client.connect();
    return client;
  }
}

const TRIGGER_STATE: Record<TriggerState['enabled'], string> = {
  O: 'ENABLE',
  A: 'ENABLE ALWAYS',
  R: 'ENABLE REPLICA',
  D: 'DISABLE',
};

/** The lines of one table's rows in the file, each with its newline, up to the line `\.`. */
async function* rowsOfTable(nextLine: () => Promise<string>): AsyncGenerator<string> {
  for (let line = await nextLine(); line !== '\\.'; line = await nextLine()) yield `${line}\n`;
}

/**
 * The sequence set above every id the database handed out: the live value (read before the
 * restore: ids issued since the backup, gone with it, must not come again), the backup's, and the
 * highest id restored. Returns the value the next id continues above.
 */
async function continueAbove(
  client: pg.Client,
  sequence: SequenceOfColumn,
  backedUp: SequenceOfColumn[],
): Promise<bigint> {
  const highest = await client.query<{ max: string | null }>(
    `SELECT max(${quote(sequence.column)})::text AS max FROM ${quote(sequence.table)}`,
  );
  const dumped = backedUp.find((other) => other.table === sequence.table && other.column === sequence.column);
  const above = [sequence.lastValue, dumped?.lastValue, highest.rows[0]?.max]
    .map((value) => BigInt(value ?? 0))
    .reduce((a, b) => (a > b ? a : b), 0n);
  if (above > 0n)
    await client.query('SELECT setval($1::regclass, $2::bigint, true)', [sequence.sequence, above.toString()]);
  return above;
}

/** The restore replaces the same tables, made by the same migrations: anything else would mix schemas. */
async function refuseAnotherSchema(client: pg.Client, header: Header): Promise<void> {
  const migrations = await appliedMigrations(client);
  if (migrations.join('\n') !== header.migrations.join('\n'))
    throw new BackupRefusedError(
      `the backup was taken after ${header.migrations.length} migrations (the last ${header.migrations.at(-1) ?? 'none'}), ` +
        `this database has ${migrations.length} (the last ${migrations.at(-1) ?? 'none'}): restore it with the version of the service that wrote it`,
    );
  const live = await tablesParentsFirst(client);
  const shapeOf = (shapes: TableShape[]): string =>
    shapes
      .map((shape) => `${shape.table}(${[...shape.columns].sort().join(',')})`)
      .sort()
      .join(' ');
  if (shapeOf(live) !== shapeOf(header.tables))
    throw new BackupRefusedError(
      `the backup's tables (${shapeOf(header.tables)}) are not this database's (${shapeOf(live)})`,
    );
}

async function appliedMigrations(client: pg.Client): Promise<string[]> {
  const exists = await client.query<{ table: string | null }>(`SELECT to_regclass('migrations')::text AS table`);
  if (exists.rows[0]?.table === null) return [];
  return (await client.query<{ name: string }>('SELECT name FROM migrations ORDER BY id')).rows.map((row) => row.name);
}

/** Every table of the schema with the columns a COPY writes (no generated ones), referenced tables first. */
async function tablesParentsFirst(client: pg.Client): Promise<TableShape[]> {
  const tables = await client.query<{ oid: number; table: string; columns: string[] }>(`
    SELECT c.oid::int AS oid, c.relname AS table,
      array(SELECT a.attname::text FROM pg_attribute a
        WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '' ORDER BY a.attnum) AS columns
    FROM pg_class c
    WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
    ORDER BY c.relname`);
  const references = await client.query<{ child: number; parent: number }>(`
    SELECT conrelid::int AS child, confrelid::int AS parent FROM pg_constraint
    WHERE contype = 'f' AND conrelid <> confrelid AND connamespace = current_schema()::regnamespace`);
  const ordered: TableShape[] = [];
  const placed = new Set<number>();
  const remaining = [...tables.rows];
  while (remaining.length > 0) {
    const ready = remaining.findIndex((table) =>
      references.rows.every((ref) => ref.child !== table.oid || placed.has(ref.parent)),
    );
    // A cycle of foreign keys (none here): its tables in name order, and COPY says which key fails.
    const [next] = remaining.splice(ready === -1 ? 0 : ready, 1);
    if (next === undefined) break;
    placed.add(next.oid);
    ordered.push({ table: next.table, columns: next.columns });
  }
  return ordered;
}

/** The sequences behind identity and serial columns of the schema, with their values now. */
async function sequencesOfColumns(client: pg.Client): Promise<SequenceOfColumn[]> {
  const result = await client.query<{ table: string; column: string; sequence: string; last_value: string | null }>(`
    SELECT t.relname AS table, a.attname AS column, s.oid::regclass::text AS sequence,
      pg_sequence_last_value(s.oid)::text AS last_value
    FROM pg_depend d
      JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S'
      JOIN pg_class t ON t.oid = d.refobjid
      JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = d.refobjsubid
    WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')
      AND t.relnamespace = current_schema()::regnamespace
    ORDER BY t.relname, a.attname`);
  return result.rows.map((row) => ({
    table: row.table,
    column: row.column,
    sequence: row.sequence,
    lastValue: row.last_value,
  }));
}

/** Every trigger of the schema's tables but the internal ones (foreign keys), with its state. */
async function triggerStates(client: pg.Client): Promise<TriggerState[]> {
  const result = await client.query<TriggerState>(`
    SELECT c.relname AS table, t.tgname AS trigger, t.tgenabled AS enabled
    FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
    WHERE NOT t.tgisinternal AND c.relnamespace = current_schema()::regnamespace
    ORDER BY c.relname, t.tgname`);
  return result.rows;
}
