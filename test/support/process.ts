import { type ChildProcess, spawn } from 'node:child_process';

/** This process's environment without DATABASE_URL: a child that needs a database is given one. */
export function inheritedEnv(): NodeJS.ProcessEnv {
  const inherited = { ...process.env };
  delete inherited.DATABASE_URL;
  return inherited;
}

/** The built service as an operator runs it: `node dist/src/main.js` (npm run test:process builds it). */
export function startService(env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, ['dist/src/main.js'], {
    env: { ...inheritedEnv(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/**
 * The built service as a developer runs it in a colour terminal: under a pseudo-terminal that
 * util-linux `script` opens, so stdout is a TTY. Writing Ctrl-C (`\x03`) to its stdin interrupts
 * the service as the key does; `script -e` exits with the service's exit code.
 */
export function startServiceOnTerminal(env: Record<string, string>): ChildProcess {
  // script runs its command through $SHELL: dash, as on CI's machine, whatever this machine's is.
  const terminal: NodeJS.ProcessEnv = { ...inheritedEnv(), TERM: 'xterm-256color', SHELL: '/bin/sh', ...env };
  // What would turn colour off (or force it) for reasons of this machine rather than of the service:
  // Node's hasColors() answers false under a bare `CI` (as CI's machine sets it), and true in tmux.
  for (const name of ['NO_COLOR', 'FORCE_COLOR', 'NODE_DISABLE_COLORS', 'CI', 'TMUX']) delete terminal[name];
  // `exec`: a dash left between script and the service dies of the Ctrl-C itself (exit 130).
  return spawn('script', ['-qefc', `exec '${process.execPath}' dist/src/main.js`, '/dev/null'], {
    env: terminal,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

/** JSON log lines, in the shape the tests read. */
export type LogLine = { level?: number; msg?: string; route?: string; response?: { status?: number }; err?: unknown };

/** Each line of a JSON log, parsed: a line that is not JSON fails the test. */
export function jsonLines(lines: string[]): LogLine[] {
  return lines.filter((line) => line !== '').map((line) => JSON.parse(line) as LogLine);
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

/** Resolves once stdout has a line matching `pattern`; fails after 30 s, or when the process exits first. */
export async function outputLine(output: ProcessOutput, pattern: RegExp): Promise<void> {
  let exited = false;
  void output.exit.then(() => (exited = true));
  for (let waited = 0; !pattern.test(output.stdout()); waited += 50) {
    if (exited || waited > 30_000)
      throw new Error(`no line matching ${pattern}:\n${output.stdout()}${output.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
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
