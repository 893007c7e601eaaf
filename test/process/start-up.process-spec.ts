import { removeEmbeddedPostgres } from '../support/embedded-postgres.js';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  inheritedEnv,
  jsonLines,
  type LogLine,
  outputLine,
  outputOf,
  readiness,
  startService,
} from '../support/process.js';
import { freePort } from '../support/server.js';
import { startTcpProxy } from '../support/tcp-proxy.js';
import { tempDir } from '../support/temp-dirs.js';

const DATABASE_URL = process.env.DATABASE_URL ?? '';
const withServer = DATABASE_URL === '' ? it.skip : it;

/** What a failed start wrote: its stderr as JSON lines, and its exit code. */
async function failedStart(
  env: Record<string, string>,
): Promise<{ code: number | null; lines: LogLine[]; stdout: string }> {
  const output = outputOf(startService({ HOST: '127.0.0.1', ...env }));
  const code = await output.exit;
  return { code, lines: jsonLines(output.stderr().split('\n')), stdout: output.stdout() };
}

describe('a start that cannot go on', () => {
  it.each([
    [{ PORT: 'abc' }, /^Configuration error: PORT /],
    [{ DATABASE_URL: 'postgres://user:s3cret@[broken' }, /^Configuration error: DATABASE_URL /],
    [{ LOG_LEVEL: 'loud' }, /^Configuration error: LOG_LEVEL /],
    [{ PORT: 'abc', LOG_LEVEL: 'loud' }, /^Configuration error: PORT must .*; LOG_LEVEL must /],
  ])('stops at once with one JSON line naming the variable, and exit code 1, for %j', async (env, message) => {
    const { code, lines, stdout } = await failedStart(env);

    expect(code).toBe(1);
    expect(lines).toEqual([expect.objectContaining({ level: 60 })]);
    expect(lines[0]?.msg).toMatch(message);
    expect(JSON.stringify(lines) + stdout).not.toContain('s3cret');
  });

  withServer('names a missing database at once, with what to do', async () => {
    const url = new URL(DATABASE_URL);
    url.pathname = '/no_such_database_here';

    const { code, lines } = await failedStart({ DATABASE_URL: url.toString(), PORT: String(await freePort()) });

    expect(code).toBe(1);
    expect(lines).toEqual([expect.objectContaining({ level: 60 })]);
    expect(lines[0]?.msg).toMatch(/no_such_database_here does not exist: create it/);
  });

  it('gives up on a database that never answers after DATABASE_WAIT_SECONDS, retrying with back-off meanwhile', async () => {
    const closed = await freePort();
    const started = Date.now();

    const output = outputOf(
      startService({
        HOST: '127.0.0.1',
        PORT: String(await freePort()),
        DATABASE_URL: `postgres://u:secret-pw@127.0.0.1:${closed}/db`,
        DATABASE_WAIT_SECONDS: '3',
      }),
    );
    const code = await output.exit;
    const elapsed = Date.now() - started;

    expect(code).toBe(1);
    const failure = jsonLines(output.stderr().split('\n'));
    expect(failure).toHaveLength(1);
    expect(failure[0]?.msg).toMatch(new RegExp(`127.0.0.1:${closed}/db did not answer within 3 s \\(ECONNREFUSED\\)`));
    const retries = jsonLines(output.stdout().split('\n')).filter((line) => /retrying in/.test(line.msg ?? ''));
    expect(retries.length).toBeGreaterThanOrEqual(2);
    expect(elapsed).toBeGreaterThanOrEqual(3000);
    expect(output.stdout() + output.stderr()).not.toContain('secret-pw');
  });

  withServer('waits for a database that comes up after the service, then starts', async () => {
    const proxy = await startTcpProxy(DATABASE_URL);
    await proxy.cut();
    const port = await freePort();
    const child = startService({
      HOST: '127.0.0.1',
      PORT: String(port),
      DATABASE_URL: proxy.url,
      API_KEYS: 'k',
      DATABASE_WAIT_SECONDS: '30',
    });
    const output = outputOf(child);
    try {
      // The database comes back only once the service has met it down: a fixed pause raced a slow start.
      await outputLine(output, /does not answer yet \(ECONNREFUSED\); retrying in/);
      await proxy.restore();

      await readiness(port, output);
    } finally {
      child.kill('SIGTERM');
      await output.exit;
      await proxy.close();
    }
  });

  it('names a port in use, exits 1, and issues no key: the next start still prints the first-run key', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'petstore-port-'));
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const address = taken.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    try {
      const { code, lines, stdout } = await failedStart({ PORT: String(port), DATA_DIR: dataDir, API_KEYS: '' });
      expect(code).toBe(1);
      expect(lines).toEqual([
        expect.objectContaining({
          level: 60,
          msg: `Start failed: Port ${port} is in use on 127.0.0.1: stop the other process or set PORT`,
        }),
      ]);
      expect(stdout).not.toContain('API key:');

      const free = await freePort();
      const child = startService({ HOST: '127.0.0.1', PORT: String(free), DATA_DIR: dataDir, API_KEYS: '' });
      const second = outputOf(child);
      await readiness(free, second);
      await new Promise((resolve) => setTimeout(resolve, 500));
      child.kill('SIGTERM');
      expect(await second.exit).toBe(0);
      expect(second.stdout()).toMatch(/key 1 was issued/);
    } finally {
      taken.close();
      await removeEmbeddedPostgres(dataDir).catch(() => undefined);
    }
  });

  it('names a HOST that does not resolve', async () => {
    const { code, lines } = await failedStart({
      HOST: 'nope.invalid',
      PORT: String(await freePort()),
      DATABASE_URL,
      DATA_DIR: tempDir('petstore-host-'),
    });

    expect(code).toBe(1);
    expect(lines).toEqual([
      expect.objectContaining({
        msg: 'Start failed: HOST nope.invalid cannot be resolved: set HOST to an address of this machine (0.0.0.0 for all)',
      }),
    ]);
  });
});

describe('the .env file', () => {
  withServer('is read before anything checks the environment, real variables winning', async () => {
    const directory = tempDir('petstore-env-');
    const port = await freePort();
    // PORT has a default: read after the configuration was checked, .env's would be hidden by it.
    writeFileSync(path.join(directory, '.env'), `PORT=${port}\nHOST=not_a_host\n`);
    const env: NodeJS.ProcessEnv = { ...inheritedEnv(), HOST: '127.0.0.1', DATABASE_URL, API_KEYS: 'k' };
    delete env.PORT;
    const child = spawn(process.execPath, [path.resolve('dist/src/main.js')], { cwd: directory, env });
    const output = outputOf(child);
    try {
      await outputLine(output, /listening on/);

      expect(output.stdout()).toContain(`listening on http://127.0.0.1:${port} `);
    } finally {
      child.kill('SIGTERM');
      await output.exit;
    }
  });
});
