import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** Servers run on CPU 0 and the load generator on CPU 1, when taskset exists. */
export const pinned = spawnSync('taskset', ['-c', '0', 'true']).status === 0;
export const SERVER_CPU = pinned ? '0' : null;
export const CLIENT_CPU = pinned ? '1' : null;

/** Moves this process (the one-at-a-time client of the paging part) to the load generator's CPU. */
export function pinThisProcess(): boolean {
  return (
    CLIENT_CPU !== null &&
    spawnSync('taskset', ['-a', '-p', '-c', CLIENT_CPU, String(process.pid)], { stdio: 'ignore' }).status === 0
  );
}

export type Server = {
  name: string;
  url: string;
  /** The Node process that serves, for its CPU time and peak RSS. */
  pid: number;
  /** Throws, with the end of the process's log, if it has exited. */
  assertRunning(): void;
  stop(signal?: NodeJS.Signals): Promise<void>;
};

export type Launch = {
  name: string;
  /** argv, e.g. ['sh', '-c', <start:prod>] or [process.execPath, <script>]. */
  command: string[];
  cwd: string;
  env: Record<string, string>;
  /** stdout and stderr go here, not through a pipe the harness would have to drain. */
  logFile: string;
};

/**
 * Starts `command` pinned to the server CPU, on a free loopback port, with only the given
 * environment plus PATH (this Node's directory first, as `npm run` puts the running Node's first),
 * and resolves once GET /healthz answers 200.
 */
export async function startServer({ name, command, cwd, env, logFile }: Launch): Promise<Server> {
  const port = await findFreePort();
  const [file = '', ...args] = SERVER_CPU === null ? command : ['taskset', '-c', SERVER_CPU, ...command];
  const log = openSync(logFile, 'a');
  const child = spawn(file, args, {
    cwd,
    env: {
      PATH: [path.dirname(process.execPath), path.join(cwd, 'node_modules/.bin'), process.env.PATH ?? ''].join(':'),
      NODE_ENV: 'production',
      HOST: '127.0.0.1',
      PORT: String(port),
      ...env,
    },
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const running = (): boolean => child.exitCode === null && child.signalCode === null;
  // The log is gone once the harness has cleaned up after an interruption.
  const lastWords = (): string =>
    existsSync(logFile) ? readFileSync(logFile, 'utf8').trim().split('\n').slice(-40).join('\n') : '';
  let pid = child.pid ?? 0;
  const server: Server = {
    name,
    url: `http://127.0.0.1:${port}`,
    get pid() {
      return pid;
    },
    assertRunning(): void {
      if (!running()) throw new Error(`${name} exited (${child.exitCode ?? child.signalCode}):\n${lastWords()}`);
    },
    stop: (signal?: NodeJS.Signals) => stop(child, pid, exited, signal),
  };
  try {
    await waitUntilHealthy(server.url, running, 60_000);
    pid = nodeProcessUnder(pid);
  } catch (error) {
    await server.stop();
    throw new Error(
      `${name} did not start: ${error instanceof Error ? error.message : String(error)}\n${lastWords()}`,
      {
        cause: error,
      },
    );
  }
  return server;
}

async function waitUntilHealthy(url: string, running: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!running()) throw new Error('exited');
    const response = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1000) }).catch(() => null);
    if (response?.status === 200) return;
    await sleep(200);
  }
  throw new Error(`no healthy answer within ${timeoutMs / 1000} s`);
}

/**
 * taskset and `sh -c "exec node ..."` become the Node process itself; without `exec`, Node is a
 * child of the shell. Either way the process measured must be this harness's Node binary.
 */
function nodeProcessUnder(pid: number): number {
  const node = realpathSync(process.execPath);
  for (let at: number | undefined = pid, depth = 0; at !== undefined && depth < 4; depth++) {
    if (executableOf(at) === node) return at;
    const children: string[] = readProc(at, `task/${at}/children`).trim().split(' ');
    at = children[0] ? Number(children[0]) : undefined;
  }
  throw new Error(`no ${node} process found under pid ${pid}: the server must run on the harness's Node`);
}

/** Asks the Node process to stop (SIGINT lets --cpu-prof write its profile), and kills it after 15 s. */
async function stop(
  child: ChildProcess,
  pid: number,
  exited: Promise<void>,
  signal: NodeJS.Signals = 'SIGTERM',
): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  process.kill(pid, signal);
  const timer = setTimeout(() => {
    child.kill('SIGKILL');
    if (pid !== child.pid) process.kill(pid, 'SIGKILL');
  }, 15_000);
  await exited;
  clearTimeout(timer);
}

/** Clock ticks per second of /proc/<pid>/stat's CPU times. */
const TICKS_PER_SECOND = Number(spawnSync('getconf', ['CLK_TCK']).stdout?.toString().trim()) || 100;

/** CPU time (user + system) the process has used so far. */
export function cpuSeconds(pid: number): number {
  return cpuTicks(readProc(pid, 'stat'), { withEndedChildren: false }) / TICKS_PER_SECOND;
}

/**
 * CPU time (user + system) of every PostgreSQL process on this machine so far, with what those that
 * have ended used (their parent's cutime and cstime): the database's work for a run, which the
 * server's own figure leaves out. 0 when PostgreSQL runs on another machine.
 */
export function databaseCpuSeconds(): number {
  let ticks = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readProc(Number(entry), 'stat');
    if (stat.startsWith(`${entry} (postgres) `)) ticks += cpuTicks(stat, { withEndedChildren: true });
  }
  return ticks / TICKS_PER_SECOND;
}

/** Fields 14 and 15 of /proc/<pid>/stat (utime, stime), and 16 and 17 (cutime, cstime) when asked. */
function cpuTicks(stat: string, { withEndedChildren }: { withEndedChildren: boolean }): number {
  const fields = stat
    .slice(stat.lastIndexOf(')') + 2)
    .split(' ')
    .slice(11, withEndedChildren ? 15 : 13);
  return fields.reduce((sum, field) => sum + Number(field), 0);
}

/** The process's peak resident set since it started (VmHWM). */
export function peakRssMiB(pid: number): number {
  return Number(/VmHWM:\s+(\d+) kB/.exec(readProc(pid, 'status'))?.[1] ?? 0) / 1024;
}

function executableOf(pid: number): string {
  try {
    return realpathSync(`/proc/${pid}/exe`);
  } catch {
    return ''; // gone, or not ours to read: not the Node process
  }
}

function readProc(pid: number, file: string): string {
  try {
    return readFileSync(`/proc/${pid}/${file}`, 'utf8');
  } catch {
    return ''; // the process is gone: no figures
  }
}

function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() =>
        typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}
