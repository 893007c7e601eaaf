import { removeEmbeddedPostgres } from '../support/embedded-postgres.js';
import { execFile, execFileSync, spawn } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { steadyLoad } from '../support/load.js';
import { inheritedEnv, jsonLines, outputOf, readiness, startService } from '../support/process.js';
import { freePort } from '../support/server.js';

const start = startService;

describe('the service process', () => {
  it('on SIGTERM under steady keep-alive load drops no request, stops its embedded PostgreSQL and exits 0', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'petstore-process-'));
    const port = await freePort();
    const child = start({
      PORT: String(port),
      DATA_DIR: dataDir,
      API_KEYS: 'process-test-key',
      HOST: '127.0.0.1',
      RATE_LIMIT: 'off',
      SHUTDOWN_DELAY_SECONDS: '1',
    });
    const output = outputOf(child);
    try {
      await readiness(port, output);

      const load = steadyLoad(`http://127.0.0.1:${port}`, {
        Authorization: 'Bearer process-test-key',
        'Content-Type': 'application/json',
      });
      await new Promise((resolve) => setTimeout(resolve, 1500));

      load.stopping();
      child.kill('SIGTERM');
      const counts = await load.finished;

      expect(await output.exit).toBe(0);
      const lines = jsonLines(output.stdout().split('\n'));
      expect(lines.map((line) => line.msg)).toEqual(
        expect.arrayContaining([
          'SIGTERM: draining, at most 11 s',
          expect.stringMatching(/^stopped: drained in \d+ ms$/),
        ]),
      );
      // The service logs one line per request it accepted: each of them was answered, with a 2xx.
      const accepted = lines.filter((line) => line.msg === 'request' && String(line.route).startsWith('/v1/pets'));
      console.log(`SIGTERM under load: ${JSON.stringify(counts)}, the service logged ${accepted.length} requests`);
      expect(counts.failed).toBe(0);
      expect(counts.droppedBy).toEqual([]);
      expect(accepted.filter((line) => (line.response?.status ?? 0) >= 300)).toEqual([]);
      expect(accepted).toHaveLength(counts.answered);
      expect(counts.answered).toBeGreaterThan(20);
      // No postgres of this DATA_DIR is left running.
      expect(execFileSync('ps', ['-eo', 'args']).toString()).not.toContain(dataDir);
    } finally {
      child.kill('SIGKILL');
      await removeEmbeddedPostgres(dataDir);
    }
  });

  it('exits on SIGTERM when the reader of its log has gone away (main.js | head -3)', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'petstore-process-'));
    const port = await freePort();
    const child = start({
      PORT: String(port),
      DATA_DIR: dataDir,
      API_KEYS: 'process-test-key',
      HOST: '127.0.0.1',
      SHUTDOWN_TIMEOUT_SECONDS: '2',
    });
    const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      // What `| head -3` does: read three lines, then close the pipe.
      const piped = new Promise<void>((resolve) => {
        let lines = 0;
        child.stdout?.on('data', (chunk: Buffer) => {
          lines += chunk.toString().split('\n').length - 1;
          if (lines >= 3) {
            child.stdout?.destroy();
            resolve();
          }
        });
      });
      await piped;
      // Listening, asked nothing over HTTP (a request would log a line, and its write would meet
      // the closed pipe early): the lines of the stop are the first to find the pipe closed.
      await until(() => portOpen(port));

      child.kill('SIGTERM');
      const code = await Promise.race([
        exit,
        new Promise((resolve) => setTimeout(() => resolve('still running after 10 s'), 10_000)),
      ]);

      expect(code).toBe(0);
    } finally {
      child.kill('SIGKILL');
      await removeEmbeddedPostgres(dataDir);
    }
  });

  it('under npm run start:prod gets the SIGTERM sent to npm: it drains, stops its embedded PostgreSQL, and npm exits 0', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'petstore-process-'));
    const port = await freePort();
    // What a container running `npm run start:prod` gets from `docker stop`: the signal goes to npm only.
    // In a process group of its own, so that a failed test can kill npm and everything under it.
    const npm = spawn('npm', ['run', 'start:prod'], {
      env: {
        ...inheritedEnv(),
        PORT: String(port),
        DATA_DIR: dataDir,
        API_KEYS: 'process-test-key',
        HOST: '127.0.0.1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const output = outputOf(npm);
    try {
      await readiness(port, output);

      npm.kill('SIGTERM');

      expect(await output.exit).toBe(0);
      // npm's own lines ("> petstore@1.0.0 start:prod") are not the service's log.
      const messages = jsonLines(
        output
          .stdout()
          .split('\n')
          .filter((line) => line.startsWith('{')),
      ).map((line) => line.msg);
      expect(messages).toEqual(
        expect.arrayContaining([
          'SIGTERM: draining, at most 10 s',
          expect.stringMatching(/^stopped: drained in \d+ ms$/),
        ]),
      );
      expect(execFileSync('ps', ['-eo', 'args']).toString()).not.toContain(dataDir);
    } finally {
      try {
        process.kill(-(npm.pid ?? 0), 'SIGKILL');
      } catch {
        // the group has already exited
      }
      await removeEmbeddedPostgres(dataDir);
    }
  });

  it('on a first start with no key anywhere issues one, prints it once after the listening line, and stores it for the next start', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'petstore-first-run-'));
    const port = await freePort();
    const env = { PORT: String(port), DATA_DIR: dataDir, API_KEYS: '', HOST: '127.0.0.1' };
    try {
      const first = start(env);
      const firstOutput = outputOf(first);
      await readiness(port, firstOutput);
      await until(() => Promise.resolve(firstOutput.stdout().includes('API key:')));
      const key = /API key: (psk_[A-Za-z0-9_-]{43})/.exec(firstOutput.stdout())?.[1] ?? '';
      expect(
        (await fetch(`http://127.0.0.1:${port}/v1/pets`, { headers: { Authorization: `Bearer ${key}` } })).status,
      ).toBe(200);
      first.kill('SIGTERM');
      expect(await firstOutput.exit).toBe(0);

      const second = start(env);
      const secondOutput = outputOf(second);
      await readiness(port, secondOutput);
      const status = (await fetch(`http://127.0.0.1:${port}/v1/pets`, { headers: { Authorization: `Bearer ${key}` } }))
        .status;
      second.kill('SIGTERM');
      await secondOutput.exit;

      expect(key).not.toBe('');
      expect(status).toBe(200);
      expect(secondOutput.stdout()).not.toContain('API key:');
      // The JSON log is written in batches: the listening line must not wait behind the banner.
      const firstLines = firstOutput.stdout().split('\n');
      const listening = firstLines.findIndex((line) => line.includes('"msg":"Pet Store listening on'));
      expect(listening).toBeGreaterThanOrEqual(0);
      expect(firstLines.findIndex((line) => line.startsWith('No API key existed'))).toBeGreaterThan(listening);
      // The key appears once on stdout, never in a log line.
      expect(firstOutput.stdout().split(key).length - 1).toBe(1);
      expect(
        firstOutput
          .stdout()
          .split('\n')
          .filter((line) => line.startsWith('{') && line.includes(key)),
      ).toEqual([]);
    } finally {
      await removeEmbeddedPostgres(dataDir);
    }
  });

  it('npm run keys issues, lists and revokes keys on the embedded database of a running service', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'petstore-keys-'));
    const port = await freePort();
    const env = {
      PORT: String(port),
      DATA_DIR: dataDir,
      API_KEYS: 'process-test-key',
      API_KEY_CACHE_SECONDS: '1',
      HOST: '127.0.0.1',
    };
    const service = start(env);
    const output = outputOf(service);
    // Run without blocking this process: under spawnSync the service closed an idle keep-alive
    // connection that this process could not see closing, and the next fetch reused it.
    const keys = (...args: string[]) =>
      new Promise<{ status: number; stdout: string }>((resolve) => {
        execFile(
          process.execPath,
          ['dist/src/keys.js', ...args],
          { env: { ...inheritedEnv(), ...env }, encoding: 'utf8' },
          (error, stdout) => resolve({ status: typeof error?.code === 'number' ? error.code : error ? 1 : 0, stdout }),
        );
      });
    const list = () =>
      fetch(`http://127.0.0.1:${port}/v1/pets`, { headers: { Authorization: `Bearer ${key}` } }).then(
        (response) => response.status,
      );
    let key = '';
    try {
      await readiness(port, output);

      const issued = await keys('issue', '--label', 'from the cli');
      key = issued.stdout.split('\n')[1] ?? '';
      const listed = await keys('list');
      const statusWithKey = await list();
      const revoked = await keys('revoke', '1');
      const revokedAt = Date.now();
      while ((await list()) === 200 && Date.now() - revokedAt < 5000)
        await new Promise((resolve) => setTimeout(resolve, 50));
      const refusedAfterMs = Date.now() - revokedAt;
      const wrong = await keys('revoke', 'one');

      expect(issued.status).toBe(0);
      expect(key).toMatch(/^psk_[A-Za-z0-9_-]{43}$/);
      expect(statusWithKey).toBe(200);
      expect(listed.stdout).toMatch(/^1\tfrom the cli\t\S+\t-$/m);
      expect(listed.stdout).not.toContain(key);
      expect(revoked.stdout.trim()).toBe('Revoked key 1.');
      expect(await list()).toBe(401);
      expect(refusedAfterMs).toBeLessThan(2000);
      expect(wrong.status).toBe(2);
      expect(wrong.stdout).toContain('Usage:');
      // The running service kept its database: the tool attached to it rather than stopping it.
      expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
    } finally {
      service.kill('SIGTERM');
      await output.exit;
      await removeEmbeddedPostgres(dataDir);
    }
  });
});

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

async function until(condition: () => Promise<boolean>): Promise<void> {
  for (let tries = 0; !(await condition()); tries++) {
    if (tries > 300) throw new Error('condition not met within 30 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
