import { type ChildProcess, spawn } from 'node:child_process';

/** The built service as an operator runs it: `node dist/src/main.js` (npm run test:process builds it). */
export function startService(env: Record<string, string>): ChildProcess {
  const { DATABASE_URL: _unused, ...inherited } = process.env;
  return spawn(process.execPath, ['dist/src/main.js'], {
    env: { ...inherited, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

export type ProcessOutput = { stdout: () => string; stderr: () => string; exit: Promise<number | null> };

export function outputOf(child: ChildProcess): ProcessOutput {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return {
    stdout: () => stdout,
    stderr: () => stderr,
    exit: new Promise((resolve) => child.once('exit', (code) => resolve(code))),
  };
}

/** Resolves once the service answers /readyz with 200. */
export async function readiness(port: number, output: ProcessOutput): Promise<void> {
  for (let tries = 0; ; tries++) {
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`).then(
      (response) => response.status === 200,
      () => false,
    );
    if (ready) return;
    if (tries > 300) throw new Error(`the service did not start:\n${output.stdout()}${output.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
