import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { findFreePort, startEmbeddedPostgres } from '../../src/infrastructure/embedded-postgres.js';

// These tests always use the embedded server: they are about it, whatever DATABASE_URL says.
let dataDir: string;

beforeEach(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'petstore-embedded-'));
});
afterEach(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

async function query(url: string, sql: string): Promise<unknown[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}

/** A Node process that starts postgres on the cluster and hangs; resolves once postgres is ready. */
async function holdCluster(): Promise<ChildProcess> {
  const port = await findFreePort();
  const child = spawn(process.execPath, [path.resolve('test/support/hold-embedded-postgres.mjs'), dataDir, String(port)], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => chunk.toString().includes('ready') && resolve());
    child.once('exit', (code) => reject(new Error(`holder exited with ${code}`)));
  });
  return child;
}

async function postmasterPid(): Promise<number> {
  return Number((await readFile(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8')).split('\n')[0]);
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('embedded PostgreSQL', () => {
  it('keeps data across a stop and a start', async () => {
    const first = await startEmbeddedPostgres(dataDir);
    await query(first.url, 'CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)');
    await first.stop();

    const second = await startEmbeddedPostgres(dataDir);
    try {
      expect(await query(second.url, 'SELECT v FROM kept')).toEqual([{ v: 42 }]);
    } finally {
      await second.stop();
    }
  });

  it('starts again with no manual step after the Node process that ran it was killed with SIGKILL', async () => {
    await (await startEmbeddedPostgres(dataDir)).stop(); // initialise the cluster and its password
    const holder = await holdCluster();
    const orphan = await postmasterPid();
    holder.kill('SIGKILL');
    await new Promise((resolve) => holder.once('exit', resolve));
    expect(isRunning(orphan)).toBe(true); // the trap: postgres outlives its Node parent

    const restarted = await startEmbeddedPostgres(dataDir);
    try {
      expect(isRunning(orphan)).toBe(false);
      expect(await query(restarted.url, 'SELECT 1 AS ok')).toEqual([{ ok: 1 }]);
    } finally {
      await restarted.stop();
    }
  });

  it('refuses a DATA_DIR whose server belongs to another running service', async () => {
    await (await startEmbeddedPostgres(dataDir)).stop();
    const holder = await holdCluster();
    try {
      await expect(startEmbeddedPostgres(dataDir)).rejects.toThrow(/in use by another running service/);
      expect(isRunning(await postmasterPid())).toBe(true);
    } finally {
      holder.kill('SIGTERM');
      await new Promise((resolve) => holder.once('exit', resolve));
    }
  });
});
