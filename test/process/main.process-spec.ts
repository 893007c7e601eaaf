import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../support/server.js';

// The built service as an operator runs it: `node dist/src/main.js` (npm run test:process builds it).
function start(env: Record<string, string>): ChildProcess {
  const { DATABASE_URL: _unused, ...inherited } = process.env;
  return spawn(process.execPath, ['dist/src/main.js'], { env: { ...inherited, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
}

function outputOf(child: ChildProcess): { stdout: () => string; stderr: () => string; exit: Promise<number | null> } {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return { stdout: () => stdout, stderr: () => stderr, exit: new Promise((resolve) => child.once('exit', (code) => resolve(code))) };
}

describe('the service process', () => {
  it.each([
    [{ PORT: 'abc' }, 'PORT'],
    [{ DATABASE_URL: 'postgres://user:s3cret@[broken' }, 'DATABASE_URL'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
  ])('stops at once with one line naming the variable and exit code 1 for %j', async (env, name) => {
    const output = outputOf(start(env));

    expect(await output.exit).toBe(1);
    const lines = output.stderr().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^Configuration error: ${name} `));
    expect(output.stderr() + output.stdout()).not.toContain('s3cret');
  });

  it('on SIGTERM drains, stops its embedded PostgreSQL and exits 0', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'petstore-process-'));
    const port = await freePort();
    const child = start({ PORT: String(port), DATA_DIR: dataDir, API_KEYS: 'process-test-key', HOST: '127.0.0.1' });
    const output = outputOf(child);
    try {
      for (let tries = 0; ; tries++) {
        const ready = await fetch(`http://127.0.0.1:${port}/readyz`).then((response) => response.status === 200, () => false);
        if (ready) break;
        if (tries > 300) throw new Error(`the service did not start:\n${output.stdout()}${output.stderr()}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }

      child.kill('SIGTERM');

      expect(await output.exit).toBe(0);
      const lines = output.stdout().trim().split('\n').map((line) => JSON.parse(line));
      expect(lines.map((line) => line.msg)).toEqual(expect.arrayContaining(['SIGTERM: draining, at most 10 s', expect.stringMatching(/^stopped: drained in \d+ ms$/)]));
      // No postgres of this DATA_DIR is left running.
      expect(execFileSync('ps', ['-eo', 'args']).toString()).not.toContain(dataDir);
    } finally {
      child.kill('SIGKILL');
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
