import { execFile } from 'node:child_process';
import { appendFile, cp, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import {
  clusterDirFor,
  type EmbeddedDatabase,
  startEmbeddedPostgres,
} from '../../src/infrastructure/platform/database/embedded-postgres.js';
import { findFreePort } from './free-port.js';
import { removeEmbeddedPostgres } from './embedded-postgres.js';
import { tempDir } from './temp-dirs.js';

/**
 * A real primary and a hot standby streaming from it, both the embedded PostgreSQL of the npm
 * package (so that the tests need no server installed), each in a directory of its own. The
 * standby starts from a copy of the primary's cluster made while the primary is stopped, and
 * streams through a replication slot created before, so it misses no WAL.
 */
export type StreamingPair = {
  primaryUrl: string;
  standbyUrl: string;
  /** Runs one statement on the primary (as the superuser, on a connection of its own, READ COMMITTED). */
  onPrimary(sql: string): Promise<pg.QueryResult>;
  onStandby(sql: string): Promise<pg.QueryResult>;
  /** Runs one statement on the standby as a client that pins nothing would. */
  plainlyOnStandby(sql: string): Promise<pg.QueryResult>;
  /** Until the standby has replayed everything the primary has flushed by now. */
  caughtUp(): Promise<void>;
  stop(): Promise<void>;
};

const execFileAsync = promisify(execFile);
const SLOT = 'petstore_tests';

export async function startStreamingPair(): Promise<StreamingPair> {
  const root = tempDir('petstore-pair-');
  const primaryDir = path.join(root, 'primary');
  const standbyDir = path.join(root, 'standby');
  const port = await findFreePort();
  let primary: EmbeddedDatabase | null = null;
  let standby: EmbeddedDatabase | null = null;
  const stop = async (): Promise<void> => {
    await standby?.stop();
    await primary?.stop();
    for (const dir of [standbyDir, primaryDir]) await removeEmbeddedPostgres(dir).catch(() => undefined);
    await rm(root, { recursive: true, force: true });
  };
  try {
    primary = await startEmbeddedPostgres(primaryDir, { port });
    await query(primary.url, `SELECT pg_create_physical_replication_slot('${SLOT}', true)`);
    await primary.stop();
    primary = null;

    const from = await clusterDirFor(primaryDir);
    await mkdir(standbyDir, { recursive: true, mode: 0o700 });
    const to = await clusterDirFor(standbyDir);
    await cp(from, to, { recursive: true, filter: (source) => !/postmaster\.(pid|opts)$/.test(source) });
    await cp(path.join(primaryDir, 'postgres-password'), path.join(standbyDir, 'postgres-password'));
    const password = (await readFile(path.join(primaryDir, 'postgres-password'), 'utf8')).trim();
    await writeFile(path.join(to, 'standby.signal'), '');
    await appendFile(
      path.join(to, 'postgresql.auto.conf'),
      `primary_conninfo = 'host=127.0.0.1 port=${port} user=postgres password=${password}'\n` +
        `primary_slot_name = '${SLOT}'\nhot_standby = on\n`,
    );
    // As root the clusters belong to the OS user postgres: so must the copy.
    if (process.getuid?.() === 0) {
      const { uid, gid } = await stat(from);
      await execFileAsync('chown', ['-R', `${uid}:${gid}`, to]);
    }

    primary = await startEmbeddedPostgres(primaryDir, { port });
    standby = await startEmbeddedPostgres(standbyDir);
  } catch (error) {
    await stop();
    throw error;
  }
  const [primaryUrl, standbyUrl] = [primary.url, standby.url];
  return {
    primaryUrl,
    standbyUrl,
    onPrimary: (sql) => query(primaryUrl, sql),
    onStandby: (sql) => query(standbyUrl, sql),
    async plainlyOnStandby(sql) {
      const client = new pg.Client({ connectionString: standbyUrl });
      await client.connect();
      try {
        return await client.query(sql);
      } finally {
        await client.end();
      }
    },
    async caughtUp() {
      const { rows } = await query(primaryUrl, 'SELECT pg_current_wal_flush_lsn()::text AS lsn');
      const lsn = String(Reflect.get(Object(rows[0]), 'lsn'));
      const deadline = Date.now() + 10_000;
      for (;;) {
        const replayed = await query(standbyUrl, `SELECT pg_last_wal_replay_lsn() >= '${lsn}'::pg_lsn AS done`);
        if (Reflect.get(Object(replayed.rows[0]), 'done') === true) return;
        if (Date.now() > deadline) throw new Error(`the standby did not replay up to ${lsn} within 10 s`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    },
    stop,
  };
}

/** On a connection of its own; READ COMMITTED whatever a test sets as the database's default. */
async function query(url: string, sql: string): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url, options: '-c default_transaction_isolation=read\\ committed' });
  await client.connect();
  try {
    return await client.query(sql);
  } finally {
    await client.end();
  }
}
