import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { findFreePort } from '../src/infrastructure/embedded-postgres.js';

/** Each server pinned to CPU 0 when taskset exists: one core's worth of throughput, away from the load generator. */
export const pinned = spawnSync('taskset', ['-c', '0', 'true']).status === 0;

/**
 * Moves this process (the load generator), all its threads, to CPU 1 when there is one: left
 * free, it also runs on CPU 0 and takes time from the server it measures, which made rounds of
 * the same server differ by up to 30%.
 */
export function pinLoadGenerator(): boolean {
  return pinned && spawnSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' }).status === 0;
}

export type Server = {
  name: string;
  url: string;
  pid: number;
  /** Throws, with the process's last output, if it has exited. */
  assertRunning(): void;
  stop(signal?: NodeJS.Signals): Promise<void>;
};

/**
 * Starts `node <nodeFlags> <script>` on a free loopback port with only the given environment,
 * and resolves once GET /healthz answers 200.
 */
export async function startServer(name: string, script: string, env: Record<string, string>, nodeFlags: string[] = []): Promise<Server> {
  const port = await findFreePort();
  const command = [process.execPath, ...nodeFlags, script];
  const [file = '', ...args] = pinned ? ['taskset', '-c', '0', ...command] : command;
  const child = spawn(file, args, {
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production', HOST: '127.0.0.1', PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Kept for the error message if the server dies; the pipes must be drained anyway.
  const output: string[] = [];
  const keep = (chunk: Buffer): void => {
    output.push(chunk.toString());
    if (output.length > 40) output.shift();
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const server = {
    name,
    url: `http://127.0.0.1:${port}`,
    pid: child.pid ?? 0,
    assertRunning(): void {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`${name} exited (${child.exitCode ?? child.signalCode}):\n${output.join('').trim()}`);
      }
    },
    stop: (signal?: NodeJS.Signals) => stop(child, exited, signal),
  };
  try {
    await waitUntilHealthy(server.url, child, 60_000);
  } catch (error) {
    await server.stop();
    throw new Error(`${name} did not start: ${error instanceof Error ? error.message : String(error)}\n${output.join('').trim()}`);
  }
  return server;
}

async function waitUntilHealthy(url: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`exited (${child.exitCode ?? child.signalCode})`);
    const response = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1000) }).catch(() => null);
    if (response?.status === 200) return;
    await sleep(200);
  }
  throw new Error(`no healthy answer within ${timeoutMs / 1000} s`);
}

/** Asks the process to stop (SIGINT lets --cpu-prof write its profile), and kills it after 15 s. */
async function stop(child: ChildProcess, exited: Promise<void>, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

/** Clock ticks per second of /proc/<pid>/stat's CPU times. */
const TICKS_PER_SECOND = Number(spawnSync('getconf', ['CLK_TCK']).stdout?.toString().trim()) || 100;

export type ProcessUsage = { maxRssMiB: number; cpuSeconds: number };

/**
 * Watches `pid` until the returned function is called, which gives the largest VmRSS seen
 * (sampled every 100 ms) and the CPU time (user + system) the process used meanwhile. CPU time
 * per request is the figure least disturbed by other load on the machine.
 */
export function watchProcess(pid: number): () => ProcessUsage {
  let maxKb = 0;
  const sample = (): void => {
    const match = /VmRSS:\s+(\d+) kB/.exec(readProc(pid, 'status'));
    maxKb = Math.max(maxKb, Number(match?.[1] ?? 0));
  };
  const startTicks = cpuTicks(pid);
  sample();
  const timer = setInterval(sample, 100);
  return () => {
    clearInterval(timer);
    sample();
    return { maxRssMiB: maxKb / 1024, cpuSeconds: (cpuTicks(pid) - startTicks) / TICKS_PER_SECOND };
  };
}

/** utime + stime: fields 14 and 15 of /proc/<pid>/stat, counted after the parenthesised command name. */
function cpuTicks(pid: number): number {
  const stat = readProc(pid, 'stat');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11] ?? 0) + Number(fields[12] ?? 0);
}

function readProc(pid: number, file: 'status' | 'stat'): string {
  try {
    return readFileSync(`/proc/${pid}/${file}`, 'utf8');
  } catch {
    return ''; // No /proc (not Linux) or the process is gone: no sample.
  }
}
