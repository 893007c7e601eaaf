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

  it('on SIGTERM under steady load answers every request it accepted, stops its embedded PostgreSQL and exits 0', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'petstore-process-'));
    const port = await freePort();
    const child = start({ PORT: String(port), DATA_DIR: dataDir, API_KEYS: 'process-test-key', HOST: '127.0.0.1', RATE_LIMIT: 'off' });
    const output = outputOf(child);
    try {
      for (let tries = 0; ; tries++) {
        const ready = await fetch(`http://127.0.0.1:${port}/readyz`).then((response) => response.status === 200, () => false);
        if (ready) break;
        if (tries > 300) throw new Error(`the service did not start:\n${output.stdout()}${output.stderr()}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }

      // 16 clients creating and listing back to back, until the service stops taking connections.
      const counts = { answered: 0, notAnswered: 0, failed: 0 };
      let stopping = false;
      const headers = { Authorization: 'Bearer process-test-key', 'Content-Type': 'application/json' };
      const clients = Array.from({ length: 16 }, async (_, client) => {
        for (let i = 0; ; i++) {
          const response = await (client % 2 === 0
            ? fetch(`http://127.0.0.1:${port}/v1/pets`, { method: 'POST', headers, body: JSON.stringify({ name: `load ${client}-${i}`, categoryId: 1 }) })
            : fetch(`http://127.0.0.1:${port}/v1/pets?limit=5`, { headers })
          ).catch(() => null);
          if (response === null) {
            counts.notAnswered++;
            if (stopping) return;
            continue;
          }
          await response.arrayBuffer();
          if (response.ok) counts.answered++;
          else counts.failed++;
        }
      });
      await new Promise((resolve) => setTimeout(resolve, 1500));

      stopping = true;
      child.kill('SIGTERM');
      await Promise.all(clients);

      expect(await output.exit).toBe(0);
      const lines = output.stdout().trim().split('\n').map((line) => JSON.parse(line));
      expect(lines.map((line) => line.msg)).toEqual(expect.arrayContaining(['SIGTERM: draining, at most 10 s', expect.stringMatching(/^stopped: drained in \d+ ms$/)]));
      // The service logs one line per request it accepted: each of them was answered, with a 2xx.
      const accepted = lines.filter((line) => line.msg === 'request' && String(line.route).startsWith('/v1/pets'));
      console.log(`SIGTERM under load: ${JSON.stringify(counts)}, the service logged ${accepted.length} requests`);
      expect(counts.failed).toBe(0);
      expect(accepted.filter((line) => line.status >= 300)).toEqual([]);
      expect(accepted).toHaveLength(counts.answered);
      expect(counts.answered).toBeGreaterThan(20);
      // No postgres of this DATA_DIR is left running.
      expect(execFileSync('ps', ['-eo', 'args']).toString()).not.toContain(dataDir);
    } finally {
      child.kill('SIGKILL');
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
