import { type ChildProcess, spawn } from 'node:child_process';
import { findFreePort } from './free-port.js';

export type TestRedis = { url: string; pause(): void; resume(): void; stop(): Promise<void> };

/**
 * A Redis of the test's own (Debian's redis-server, as on CI), so that it can be paused with SIGSTOP;
 * on `port` when given (a Redis that comes up where clients already wait for it).
 */
export async function startRedis(port?: number): Promise<TestRedis> {
  port ??= await findFreePort();
  const child: ChildProcess = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.stdout?.on('data', (chunk: Buffer) => chunk.toString().includes('Ready to accept connections') && resolve());
  });
  child.stdout?.resume();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    url: `redis://127.0.0.1:${port}`,
    pause: () => child.kill('SIGSTOP'),
    resume: () => child.kill('SIGCONT'),
    async stop() {
      child.kill('SIGCONT');
      child.kill('SIGTERM');
      await exited;
    },
  };
}
