import { type ChildProcess, execFileSync, type SpawnOptions, spawn } from 'node:child_process';
import { expect } from '@jest/globals';
import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import {
  chmod,
  chown,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  realpath,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import ts from 'typescript';
import {
  type EmbeddedDatabase,
  EmbeddedPostgresError,
  startEmbeddedPostgres,
} from '../../../../../src/infrastructure/platform/database/embedded-postgres.js';

// These tests always use the embedded server: they are about it, whatever DATABASE_URL says.
const SHARED_DIR = '/var/lib/petstore';
const TEST_USER = 'petstore-test';
const asRoot = process.getuid?.() === 0;
const sharedTmp = tmpdir();

let parentDir: string; // a fresh mktemp directory: mode 700, like a private home
let dataDir: string; // does not exist yet: the start creates it
let privateTmp: string; // os.tmpdir() of the processes hold() starts, so that anything written there shows
let compiledDir: string;
const running: EmbeddedDatabase[] = [];
const holders: ChildProcess[] = [];

beforeAll(async () => {
  compiledDir = await compileModule();
});
afterAll(async () => {
  await rm(compiledDir, { recursive: true, force: true });
});

beforeEach(async () => {
  parentDir = await mkdtemp(path.join(sharedTmp, 'petstore-embedded-'));
  dataDir = path.join(parentDir, 'data');
  privateTmp = await mkdtemp(path.join(sharedTmp, 'petstore-tmpdir-'));
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((database) => database.stop()));
  await Promise.all(holders.splice(0).map(stopHolder));
  await stopLeftoverServer(dataDir);
  await removeCluster(dataDir);
  await rm(parentDir, { recursive: true, force: true });
  await rm(privateTmp, { recursive: true, force: true });
});

async function start(options: StartOptions = {}): Promise<EmbeddedDatabase> {
  const database = await startEmbeddedPostgres(dataDir, options);
  running.push(database);
  return database;
}

/** The message of the start's failure, checked to be one line of an EmbeddedPostgresError. */
async function startFailure(options: StartOptions = {}): Promise<string> {
  const error: unknown = await start(options).then(
    () => null,
    (failure: unknown) => failure,
  );
  expect(error).toBeInstanceOf(EmbeddedPostgresError);
  const message = error instanceof Error ? error.message : '';
  expect(message).not.toMatch(/\n|^\s*at /m);
  return message;
}

async function query(url: string, sql: string): Promise<unknown[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<Record<string, unknown>>(sql)).rows;
  } finally {
    await client.end();
  }
}

function portOf(url: string): number {
  return Number(new URL(url).port);
}

/** The server's first answer to a startup message: 0 lets us in without a password, 10 asks for SCRAM. */
function authenticationRequest(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const parameters = Buffer.from('user\0postgres\0database\0postgres\0\0');
    const header = Buffer.alloc(8);
    header.writeInt32BE(header.length + parameters.length);
    header.writeInt32BE(3 << 16, 4); // protocol 3.0
    socket.once('connect', () => socket.write(Buffer.concat([header, parameters])));
    socket.once('data', (data) => {
      socket.destroy();
      resolve(data[0] === 'R'.charCodeAt(0) ? data.readInt32BE(5) : -1);
    });
    socket.once('error', reject);
  });
}

function canConnect(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 3000 });
    const answer = (connected: boolean): void => {
      socket.destroy();
      resolve(connected);
    };
    socket.once('connect', () => answer(true));
    socket.once('error', () => answer(false));
    socket.once('timeout', () => answer(false));
  });
}

/** Every path under dir (following nothing), with its mode. */
async function walk(dir: string): Promise<{ file: string; mode: number }[]> {
  const found: { file: string; mode: number }[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    found.push({ file, mode: (await lstat(file)).mode });
    if (entry.isDirectory()) found.push(...(await walk(file)));
  }
  return found;
}

async function mode(file: string): Promise<number> {
  return (await stat(file)).mode & 0o777;
}

async function entries(dir: string): Promise<string[]> {
  return readdir(dir).catch(() => []);
}

/** The top of SHARED_DIR and its clusters/, as relative paths. */
async function sharedEntries(): Promise<string[]> {
  const top = await entries(SHARED_DIR);
  return [...top, ...(await entries(path.join(SHARED_DIR, 'clusters'))).map((name) => `clusters/${name}`)];
}

async function removeCluster(data: string): Promise<void> {
  const link = path.join(data, 'postgres');
  const target = await readlink(link).catch(() => null);
  if (target === null) return;
  await rm(target, { recursive: true, force: true });
  await rm(`${target}.init`, { recursive: true, force: true });
}

async function postmasterPid(data: string): Promise<number> {
  return Number((await readFile(path.join(data, 'postgres', 'postmaster.pid'), 'utf8')).split('\n')[0]);
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The module as plain JavaScript beside a node_modules link, for processes outside Jest. */
/** Whether every directory above the checkout may be entered by other users. */
function checkoutReachableByOthers(): boolean {
  const ancestors: string[] = [];
  for (let dir = path.resolve('.'); ancestors.at(-1) !== dir; dir = path.dirname(dir)) ancestors.push(dir);
  return ancestors.every((dir) => (statSync(dir).mode & 0o001) !== 0);
}

async function compileModule(): Promise<string> {
  const dir = await mkdtemp(path.join(sharedTmp, 'petstore-embedded-js-'));
  await chmod(dir, 0o755); // the non-root test user runs it from here
  const options = { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022 };
  // The module and the one module of ours it imports, laid out as in src/.
  for (const file of [
    'infrastructure/platform/database/embedded-postgres.ts',
    'infrastructure/platform/property-of.ts',
  ]) {
    const source = await readFile(path.join('src', file), 'utf8');
    await mkdir(path.join(dir, path.dirname(file)), { recursive: true });
    await writeFile(
      path.join(dir, file.replace(/\.ts$/, '.js')),
      ts.transpileModule(source, { compilerOptions: options }).outputText,
    );
    for (let folder = path.dirname(file); folder !== '.'; folder = path.dirname(folder))
      await chmod(path.join(dir, folder), 0o755);
  }
  await writeFile(path.join(dir, 'package.json'), '{ "type": "module" }');
  await symlink(path.resolve('node_modules'), path.join(dir, 'node_modules'));
  return dir;
}

type HolderReply = { url?: string; name?: string; message?: string };
type StartOptions = Parameters<typeof startEmbeddedPostgres>[1];

/**
 * test/support/hold-embedded-postgres.mjs on `data` with TMPDIR=privateTmp (or `tmp`), optionally
 * as another OS user; resolves with its first line.
 */
async function hold(
  data: string,
  as: { user?: string; tmp?: string; options?: StartOptions } = {},
): Promise<{ holder: ChildProcess; reply: HolderReply }> {
  const args = [
    path.resolve('test/support/hold-embedded-postgres.mjs'),
    path.join(compiledDir, 'infrastructure', 'platform', 'database', 'embedded-postgres.js'),
    data,
    JSON.stringify(as.options ?? {}),
  ];
  const options: SpawnOptions = {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { ...process.env, TMPDIR: as.tmp ?? privateTmp },
  };
  const holder = as.user
    ? spawn('runuser', ['-u', as.user, '--', process.execPath, ...args], options)
    : spawn(process.execPath, args, options);
  holders.push(holder);
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: holder.stdout! }).once('line', resolve);
    holder.once('close', (code) => reject(new Error(`holder exited with ${code}`)));
  });
  return { holder, reply: JSON.parse(line) as HolderReply };
}

async function stopHolder(holder: ChildProcess): Promise<void> {
  if (holder.exitCode !== null || holder.signalCode !== null) return;
  const exited = new Promise((resolve) => holder.once('exit', resolve));
  holder.stdin?.end();
  const timer = setTimeout(() => holder.kill('SIGKILL'), 10_000); // a holder stuck in its start
  await exited;
  clearTimeout(timer);
}

/** Stops a postgres that a failed test left running on `data`: no test leaks its server. */
async function stopLeftoverServer(data: string): Promise<void> {
  const pid = await postmasterPid(data).catch(() => 0);
  const cluster = await realpath(path.join(data, 'postgres')).catch(() => null);
  const commandLine = pid > 0 ? await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '') : '';
  if (cluster === null || !commandLine.includes(`\0${cluster}\0`)) return;
  process.kill(pid, 'SIGINT');
  while (isRunning(pid)) await new Promise((resolve) => setTimeout(resolve, 100));
}

describe('embedded PostgreSQL', () => {
  it('starts in a fresh DATA_DIR under a private directory, creates the database petstore, and keeps data across a stop and a start', async () => {
    const first = await start();
    expect(await query(first.url, 'SELECT current_database() AS name')).toEqual([{ name: 'petstore' }]);
    await query(first.url, 'CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)');
    await first.stop();

    const second = await start();

    expect(await query(second.url, 'SELECT v FROM kept')).toEqual([{ v: 42 }]);
    expect(await mode(parentDir)).toBe(0o700);
  });

  it('creates DATA_DIR with mode 700, a password file of mode 600, a cluster no one else may read, and nothing in the temp directory', async () => {
    const { reply } = await hold(dataDir);
    expect(reply.url).toBeDefined();

    expect(await mode(dataDir)).toBe(0o700);
    expect((await readdir(dataDir)).sort()).toEqual(['postgres', 'postgres-password']);
    expect(await mode(path.join(dataDir, 'postgres-password'))).toBe(0o600);
    const cluster = await realpath(path.join(dataDir, 'postgres'));
    expect(await mode(cluster)).toBe(0o700);
    const readableByOthers = (await walk(cluster)).filter(
      ({ mode }) => (mode & 0o170000) !== 0o120000 && (mode & 0o077) !== 0,
    );
    expect(readableByOthers).toEqual([]);
    expect(await readdir(privateTmp)).toEqual([]);
  });

  it('lets nobody in without the password', async () => {
    const database = await start();
    const port = portOf(database.url);
    const wrong = new URL(database.url);
    wrong.password = 'wrong';

    expect(await authenticationRequest(port)).toBe(10); // SASL: SCRAM-SHA-256 asked, not "trust"
    await expect(query(wrong.href, 'SELECT 1')).rejects.toThrow(/password authentication failed/);
    const methods = await query(database.url, 'SELECT DISTINCT auth_method FROM pg_hba_file_rules');
    expect(methods).toEqual([{ auth_method: 'scram-sha-256' }]);
  });

  it('listens on 127.0.0.1 only, with no unix socket', async () => {
    const database = await start();
    const port = portOf(database.url);
    const otherAddress = Object.values(networkInterfaces())
      .flat()
      .find((address) => address !== undefined && !address.internal && address.family === 'IPv4')?.address;

    expect(await query(database.url, 'SHOW listen_addresses')).toEqual([{ listen_addresses: '127.0.0.1' }]);
    expect(await query(database.url, 'SHOW unix_socket_directories')).toEqual([{ unix_socket_directories: '' }]);
    if (otherAddress !== undefined) expect(await canConnect(otherAddress, port)).toBe(false);
    expect(await canConnect('127.0.0.1', port)).toBe(true);
  });

  it('refuses a second start on the same DATA_DIR while the first runs, in one line', async () => {
    const first = await start();

    const message = await startFailure();

    expect(message).toMatch(/is in use by another running service/);
    expect(await query(first.url, 'SELECT 1 AS ok')).toEqual([{ ok: 1 }]);
  });

  it('refuses a DATA_DIR whose server belongs to another running service', async () => {
    await (await start()).stop();
    const { reply } = await hold(dataDir);
    expect(reply.url).toBeDefined();

    const message = await startFailure();

    expect(message).toMatch(/is in use by another running service/);
    expect(isRunning(await postmasterPid(dataDir))).toBe(true);
  });

  it('lets a tool attach to the server of a running service', async () => {
    await (await start()).stop();
    const { reply } = await hold(dataDir);

    const attached = await start({ attachToRunning: true });

    expect(portOf(attached.url)).toBe(portOf(reply.url ?? ''));
    expect(await query(attached.url, 'SELECT 1 AS ok')).toEqual([{ ok: 1 }]);
  });

  it('starts again with no manual step after the Node process that ran it was killed with SIGKILL', async () => {
    await (await start()).stop();
    const { holder } = await hold(dataDir);
    const orphan = await postmasterPid(dataDir);
    holder.kill('SIGKILL');
    await new Promise((resolve) => holder.once('exit', resolve));
    expect(isRunning(orphan)).toBe(true); // the trap: postgres outlives its Node parent

    const restarted = await start();

    expect(isRunning(orphan)).toBe(false);
    expect(await query(restarted.url, 'SELECT 1 AS ok')).toEqual([{ ok: 1 }]);
  });

  it('keeps an error message to one line, whatever the output it quotes', () => {
    expect(new EmbeddedPostgresError('initdb failed: initdb: error: x\n  initdb: detail: y\n').message).toBe(
      'initdb failed: initdb: error: x initdb: detail: y',
    );
  });

  describe('fails in one line, leaving nothing in the temp directory,', () => {
    /** The failure of a start in another process, whose os.tmpdir() is privateTmp. */
    async function failure(options: StartOptions = {}): Promise<string> {
      const { reply } = await hold(dataDir, { options });
      expect(reply.name).toBe('EmbeddedPostgresError');
      expect(reply.message).not.toMatch(/\n|^\s*at /m);
      expect(await readdir(privateTmp)).toEqual([]);
      return reply.message ?? '';
    }

    it('when the binaries cannot run', async () => {
      const before = await sharedEntries();
      const empty = await mkdtemp(path.join(parentDir, 'binaries-'));

      const message = await failure({ binaries: empty });

      expect(message).toMatch(/cannot run .*\/bin\/postgres \(ENOENT\)/);
      expect(await sharedEntries()).toEqual(before);
    });

    it('when DATA_DIR holds a cluster of another PostgreSQL major version', async () => {
      await (await start()).stop();
      await writeFile(path.join(dataDir, 'postgres', 'PG_VERSION'), '99\n');

      const message = await failure();

      expect(message).toMatch(/holds a PostgreSQL 99 cluster, but the embedded server is PostgreSQL \d+: .*pg_dump/);
    });

    it('when postgres cannot listen (after initdb ran), naming the cause from its output', async () => {
      const blocker = createServer();
      await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
      const address = blocker.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      try {
        const message = await failure({ port });

        expect(message).toMatch(new RegExp(`did not start: FATAL: .*port ${port} of 127\\.0\\.0\\.1 is taken`));
        const cluster = await realpath(path.join(dataDir, 'postgres'));
        expect(await entries(`${cluster}.init`)).toEqual([]);
        expect(await entries(cluster)).toContain('PG_VERSION');
        expect(await entries(cluster)).not.toContain('postmaster.pid');
      } finally {
        blocker.close();
      }
    });

    (asRoot ? it.skip : it)('when DATA_DIR may not be written', async () => {
      await chmod(parentDir, 0o500);

      const message = await failure();

      expect(message).toMatch(/permission denied on .*data; .*set DATA_DIR to a directory you own/);
    });
  });
});

(asRoot ? describe : describe.skip)('embedded PostgreSQL started by root', () => {
  it('runs postgres as the OS user postgres, with its cluster and binaries in /var/lib/petstore and nothing else made outside DATA_DIR', async () => {
    const before = await sharedEntries();
    const id = createHash('sha256')
      .update(path.join(await realpath(parentDir), 'data'))
      .digest('hex')
      .slice(0, 16);
    const postgresUid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }));

    const { reply } = await hold(dataDir);

    const cluster = path.join(SHARED_DIR, 'clusters', id);
    const made = (await sharedEntries()).filter((entry) => !before.includes(entry));
    // Other data directories' clusters may come and go meanwhile: /var/lib/petstore is shared by
    // design, and CI starts root's fresh clones beside this suite. This one's own staging
    // directory (`<id>.init`) must be gone.
    const otherCluster = (entry: string): boolean =>
      /^clusters\/[0-9a-f]{16}(\.init)?$/.test(entry) && !entry.startsWith(`clusters/${id}`);
    const documented = (entry: string): boolean =>
      ['clusters', `clusters/${id}`].includes(entry) || /^postgresql-\d+\.\d+$/.test(entry) || otherCluster(entry);
    expect(made).toContain(`clusters/${id}`);
    expect(made.filter((entry) => !documented(entry))).toEqual([]);
    expect(await readlink(path.join(dataDir, 'postgres'))).toBe(cluster);
    expect(await mode(SHARED_DIR)).toBe(0o755);
    expect(await mode(path.join(SHARED_DIR, 'clusters'))).toBe(0o755);
    expect({ owner: (await stat(cluster)).uid, mode: await mode(cluster) }).toEqual({
      owner: postgresUid,
      mode: 0o700,
    });
    const status = await readFile(`/proc/${await postmasterPid(dataDir)}/status`, 'utf8');
    expect(/^Uid:\s+(\d+)/m.exec(status)?.[1]).toBe(String(postgresUid));
    expect(await query(reply.url ?? '', 'SELECT current_user AS name')).toEqual([{ name: 'postgres' }]);
    expect(await readdir(privateTmp)).toEqual([]);
  });

  it('keeps the binaries for postgres in a root-owned copy that no one else may change', async () => {
    await start();

    const copies = (await readdir(SHARED_DIR)).filter((name) => name.startsWith('postgresql-'));
    expect(copies).not.toEqual([]);
    for (const copy of copies) {
      expect(copy).toMatch(/^postgresql-\d+\.\d+$/); // no half copy left behind
      const changeable = (await walk(path.join(SHARED_DIR, copy))).filter(
        ({ mode }) => (mode & 0o170000) !== 0o120000 && (mode & 0o022) !== 0,
      );
      expect(changeable).toEqual([]);
      expect((await stat(path.join(SHARED_DIR, copy, 'bin', 'postgres'))).uid).toBe(0);
    }
  });

  // The test user runs this checkout's node_modules: not possible when the checkout itself is
  // under a directory only root may enter (as CI's may be). scripts/ci/fresh-clone-users.sh
  // covers a non-root user there, from a clone in that user's own home.
  (checkoutReachableByOthers() ? describe : describe.skip)(
    `as the non-root user ${TEST_USER}, whose home has mode 700`,
    () => {
      let home: string;
      let userTmp: string;

      beforeAll(() => {
        try {
          execFileSync('id', [TEST_USER], { stdio: 'ignore' });
        } catch {
          execFileSync('useradd', ['--create-home', '--shell', '/bin/sh', TEST_USER]);
        }
      });
      beforeEach(async () => {
        home = execFileSync('getent', ['passwd', TEST_USER], { encoding: 'utf8' }).split(':')[5] ?? '';
        await chmod(home, 0o700);
        userTmp = path.join(privateTmp, 'user');
        await mkdir(userTmp, { mode: 0o700 });
        const uid = Number(execFileSync('id', ['-u', TEST_USER], { encoding: 'utf8' }));
        await chown(userTmp, uid, uid);
        await chmod(privateTmp, 0o755);
      });
      afterEach(async () => {
        await Promise.all(holders.splice(0).map(stopHolder));
        await stopLeftoverServer(path.join(home, 'petstore-data'));
        await rm(path.join(home, 'petstore-data'), { recursive: true, force: true });
      });

      it('runs postgres as that user, with the cluster in DATA_DIR/postgres, touching neither the home nor /var/lib/petstore', async () => {
        const userData = path.join(home, 'petstore-data');
        const before = await sharedEntries();
        const uid = Number(execFileSync('id', ['-u', TEST_USER], { encoding: 'utf8' }));

        const { reply } = await hold(userData, { user: TEST_USER, tmp: userTmp });

        expect(reply).toEqual({ url: expect.stringMatching(/^postgres:\/\/postgres:.+@127\.0\.0\.1:\d+\/petstore$/) });
        expect(await query(reply.url ?? '', 'SELECT 1 AS ok')).toEqual([{ ok: 1 }]);
        const status = await readFile(`/proc/${await postmasterPid(userData)}/status`, 'utf8');
        expect(/^Uid:\s+(\d+)/m.exec(status)?.[1]).toBe(String(uid));
        expect(await mode(home)).toBe(0o700);
        expect(await mode(userData)).toBe(0o700);
        expect(await mode(path.join(userData, 'postgres-password'))).toBe(0o600);
        expect((await lstat(path.join(userData, 'postgres'))).isDirectory()).toBe(true);
        const readableByOthers = (await walk(userData)).filter(({ mode }) => (mode & 0o077) !== 0);
        expect(readableByOthers).toEqual([]);
        expect(await sharedEntries()).toEqual(before);
        expect(await readdir(userTmp)).toEqual([]);
      });

      it('fails in one line naming the permission problem when DATA_DIR may not be written', async () => {
        const { reply } = await hold(path.join(parentDir, 'data'), { user: TEST_USER, tmp: userTmp });

        expect(reply.name).toBe('EmbeddedPostgresError');
        expect(reply.message).toMatch(
          /^Embedded PostgreSQL: permission denied on .*; .*set DATA_DIR to a directory you own$/,
        );
        expect(await readdir(userTmp)).toEqual([]);
      });
    },
  );
});
