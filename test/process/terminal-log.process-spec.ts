import { removeEmbeddedPostgres } from '../support/embedded-postgres.js';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { jsonLines, outputOf, readiness, startService, startServiceOnTerminal } from '../support/process.js';
import { freePort } from '../support/server.js';

const DATABASE_URL = process.env.DATABASE_URL ?? '';
const withServer = DATABASE_URL === '' ? it.skip : it;

const ESC = '\u001b';
const REQUEST_LINE = /^\[\d\d:\d\d:\d\d\.\d{3}\] (INFO|ERROR): (GET|POST) (\/\S*) (\d{3}) \d+ ms id=(\S+)$/;

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let tries = 0; !condition(); tries++) {
    if (tries > 300) throw new Error(`${what}: not within 30 s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('the log on a terminal', () => {
  it('is one coloured line per request (method, path, status, duration, request id), the first-run key follows the listening line, and Ctrl-C stops the service', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'petstore-terminal-'));
    const port = await freePort();
    const child = startServiceOnTerminal({ PORT: String(port), DATA_DIR: dataDir, API_KEYS: '', HOST: '127.0.0.1' });
    const output = outputOf(child);
    const lines = () => stripVTControlCharacters(output.stdout()).split(/\r?\n/);
    try {
      await readiness(port, output);
      await until(() => output.stdout().includes('API key: '), 'the first-run key');
      const key = /API key: (\S+)/.exec(lines().join('\n'))?.[1] ?? '';

      await fetch(`http://127.0.0.1:${port}/v1/pets?limit=2`, {
        headers: { Authorization: `Bearer ${key}`, 'X-Request-Id': 'terminal-1' },
      });
      await fetch(`http://127.0.0.1:${port}/v1/pets`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', 'X-Request-Id': 'terminal-2' },
        body: JSON.stringify({ name: 'Rex', categoryId: 1 }),
      });
      await fetch(`http://127.0.0.1:${port}/v1/pets/999999`, {
        headers: { Authorization: `Bearer ${key}`, 'X-Request-Id': 'terminal-3' },
      });
      await fetch(`http://127.0.0.1:${port}/v1/pets`, {
        headers: { Authorization: 'Bearer not-the-key', 'X-Request-Id': 'refused-4' },
      });
      await until(() => lines().filter((line) => line.includes(' /v1/')).length >= 3, 'three request lines');
      child.stdin?.write('\x03');

      expect(await output.exit).toBe(0);
      const all = lines();
      const listening = all.findIndex((line) => / INFO: \[Main\] Pet Store listening on http:/.test(line));
      expect(listening).toBeGreaterThanOrEqual(0);
      expect(all.findIndex((line) => line.startsWith('No API key existed'))).toBeGreaterThan(listening);
      // Each request is one line, and nothing else is written for it; a refused one is counted per
      // client address instead, in a line written every 10 s and at shutdown.
      const requests = all.filter((line) => line.includes(' /v1/'));
      expect(requests.map((line) => REQUEST_LINE.exec(line)?.slice(2))).toEqual([
        ['GET', '/v1/pets', '200', 'terminal-1'],
        ['POST', '/v1/pets', '201', 'terminal-2'],
        ['GET', '/v1/pets/999999', '404', 'terminal-3'],
      ]);
      expect(all.filter((line) => line.includes('[RefusedRequests]'))).toEqual([
        expect.stringMatching(/ INFO: \[RefusedRequests\] requests refused .*"address":"127\.0\.0\.1".*"401":1/),
      ]);
      // The readiness probes' lines too.
      expect(all.filter((line) => / (GET|POST) \//.test(line) && !REQUEST_LINE.test(line))).toEqual([]);
      expect(all.filter((line) => line.startsWith('{'))).toEqual([]);
      expect(all).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/INFO: \[Main\] SIGINT: draining/),
          expect.stringMatching(/INFO: \[Main\] stopped: drained in \d+ ms$/),
        ]),
      );
      // Coloured: the level, and the status by its class.
      const raw = output.stdout().split(/\r?\n/);
      expect(raw.find((line) => line.includes('id=terminal-1'))).toContain(`${ESC}[32m200${ESC}[`);
      expect(raw.find((line) => line.includes('id=terminal-3'))).toContain(`${ESC}[33m404${ESC}[`);
      expect(raw.find((line) => line.includes('id=terminal-3'))).toContain(`${ESC}[32mINFO${ESC}[39m`);
      expect(output.stdout()).not.toContain('not-the-key');
      expect(output.stdout()).not.toContain('refused-4');
    } finally {
      child.kill('SIGKILL');
      await removeEmbeddedPostgres(dataDir);
    }
  });

  withServer('LOG_FORMAT=json still decides on a terminal', async () => {
    const port = await freePort();
    const child = startServiceOnTerminal({
      PORT: String(port),
      DATABASE_URL,
      API_KEYS: 'k',
      HOST: '127.0.0.1',
      LOG_FORMAT: 'json',
    });
    const output = outputOf(child);
    try {
      await readiness(port, output);
      child.stdin?.write('\x03');

      expect(await output.exit).toBe(0);
      // The terminal echoes the Ctrl-C as ^C, ahead of the next line.
      const lines = jsonLines(output.stdout().replace('^C', '').split(/\r?\n/));
      expect(lines.map((line) => line.msg)).toEqual(
        expect.arrayContaining(['request', 'SIGINT: draining, at most 10 s']),
      );
      expect(output.stdout()).not.toContain(ESC);
    } finally {
      child.kill('SIGKILL');
    }
  });
});

describe('LOG_FORMAT=pretty without a terminal', () => {
  withServer('writes the same one line per request, without colour', async () => {
    const port = await freePort();
    const child = startService({
      PORT: String(port),
      DATABASE_URL,
      API_KEYS: 'k',
      HOST: '127.0.0.1',
      LOG_FORMAT: 'pretty',
    });
    const output = outputOf(child);
    try {
      await readiness(port, output);
      await fetch(`http://127.0.0.1:${port}/v1/pets/999999999`, {
        headers: { Authorization: 'Bearer k', 'X-Request-Id': 'piped-1' },
      });
      await until(() => output.stdout().includes('piped-1'), 'the request line');
      child.kill('SIGTERM');

      expect(await output.exit).toBe(0);
      const lines = output.stdout().split('\n');
      expect(lines.filter((line) => line.includes(' /v1/'))).toEqual([
        expect.stringMatching(/^\[[\d:.]+\] INFO: GET \/v1\/pets\/999999999 404 \d+ ms id=piped-1$/),
      ]);
      expect(lines).toEqual(expect.arrayContaining([expect.stringMatching(/ INFO: \[Main\] Pet Store listening on /)]));
      expect(output.stdout()).not.toContain(ESC);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
