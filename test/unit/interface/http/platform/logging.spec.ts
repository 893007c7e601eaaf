import { createServer, type Server } from 'node:http';
import { Writable } from 'node:stream';
import type { Params } from 'nestjs-pino';
import { pinoHttp, type HttpLogger } from 'pino-http';
import { ConfigError, loadConfig } from '../../../../../src/infrastructure/platform/config.js';
import { loggerParams, type LogSettings } from '../../../../../src/interface/http/platform/logging.js';

const ESC = '\u001b';

/** What the logger wrote, and a way to wait for its lines (pino-pretty writes through a stream). */
class Capture extends Writable {
  text = '';

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    this.text += chunk.toString();
    done();
  }

  async lines(count: number): Promise<string[]> {
    for (let waited = 0; this.text.split('\n').length - 1 < count; waited++) {
      if (waited > 200) throw new Error(`expected ${count} lines, got:\n${this.text}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    return this.text.split('\n').slice(0, -1);
  }
}

function httpLoggerOf(params: Params): HttpLogger {
  const given = params.pinoHttp;
  if (!Array.isArray(given)) throw new Error('expected pino-http options and a destination');
  return pinoHttp(given[0], given[1]);
}

/**
 * A plain HTTP server with the service's request logger in front: `/status/<code>` answers with
 * that status after `delayMs`.
 */
async function loggedServer(settings: LogSettings, colour: boolean, delayMs = 0) {
  const capture = new Capture();
  const logger = httpLoggerOf(loggerParams(settings, capture, colour));
  const server: Server = createServer((request, response) => {
    logger(request, response);
    response.statusCode = Number(/\/status\/(\d{3})/.exec(request.url ?? '')?.[1] ?? 200);
    setTimeout(() => response.end(), delayMs);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the server is not listening on TCP');
  const { port } = address;
  return {
    capture,
    logger,
    get: (path: string, headers: Record<string, string> = {}) =>
      fetch(`http://127.0.0.1:${port}${path}`, { headers }).then((response) => response.text()),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('the pretty log', () => {
  it('writes one line per request: time, level, method, path without its query, status, duration and request id', async () => {
    const server = await loggedServer({ level: 'info', pretty: true }, false, 30);
    try {
      await server.get('/status/201?limit=2&after=x', {
        'X-Request-Id': 'trace-42',
        Authorization: 'Bearer secret-key-never-logged',
      });

      const lines = await server.capture.lines(1);

      expect(lines).toEqual([
        expect.stringMatching(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: GET \/status\/201 201 \d+ ms id=trace-42$/),
      ]);
      expect(Number(/ (\d+) ms /.exec(lines[0] ?? '')?.[1])).toBeGreaterThanOrEqual(25);
      expect(server.capture.text).not.toContain('secret-key-never-logged');
      expect(server.capture.text).not.toContain(ESC);
    } finally {
      await server.close();
    }
  });

  it('colours the level, the method and the status by its class when colour is on', async () => {
    const server = await loggedServer({ level: 'info', pretty: true }, true);
    try {
      await server.get('/status/200');
      await server.get('/status/404');
      await server.get('/status/503');

      const [ok, notFound, failed] = await server.capture.lines(3);

      expect(ok).toContain(`${ESC}[32mINFO${ESC}[39m`);
      expect(ok).toContain(`${ESC}[1mGET${ESC}[22m /status/200 ${ESC}[32m200${ESC}[`);
      expect(notFound).toContain(`${ESC}[33m404${ESC}[`);
      expect(failed).toContain(`${ESC}[31mERROR${ESC}[39m`);
      expect(failed).toContain(`${ESC}[31m503${ESC}[`);
      expect(ok).toMatch(/ \d+ ms .*id=[0-9a-f-]{36}/);
    } finally {
      await server.close();
    }
  });

  it("writes Nest's own lines as [Context] message, with the request id of the request they were written for", async () => {
    const server = await loggedServer({ level: 'info', pretty: true }, false);
    try {
      server.logger.logger.warn({ context: 'Main' }, 'Pet Store listening');
      server.logger.logger.child({ request: { id: 'trace-7', method: 'GET' } }).warn({ context: 'Replicas' }, 'behind');

      expect(await server.capture.lines(2)).toEqual([
        expect.stringMatching(/^\[[\d:.]+\] WARN: \[Main\] Pet Store listening$/),
        expect.stringMatching(/^\[[\d:.]+\] WARN: \[Replicas\] behind id=trace-7$/),
      ]);
    } finally {
      await server.close();
    }
  });
});

describe('the JSON log', () => {
  it('keeps its request line as operators parse it: id, method, status, duration and route, no path and no headers', async () => {
    const server = await loggedServer({ level: 'info', pretty: false }, true);
    try {
      await server.get('/status/201?limit=2', {
        'X-Request-Id': 'trace-42',
        Authorization: 'Bearer secret-key-never-logged',
      });
      // The service's JSON destination writes in batches; this one is the test's, written at once.
      const [line] = await server.capture.lines(1);

      const entry: unknown = JSON.parse(line ?? '');
      const fields = typeof entry === 'object' && entry !== null ? entry : {};

      expect(entry).toMatchObject({
        level: 30,
        pid: process.pid,
        request: { id: 'trace-42', method: 'GET' },
        response: { status: 201 },
        route: 'unmatched',
        msg: 'request',
      });
      expect(Object.keys(fields).sort()).toEqual([
        'durationMs',
        'hostname',
        'level',
        'msg',
        'pid',
        'request',
        'response',
        'route',
        'time',
      ]);
      expect(typeof Reflect.get(fields, 'durationMs')).toBe('number');
      expect(server.capture.text).not.toContain('secret-key-never-logged');
      expect(server.capture.text).not.toContain(ESC);
    } finally {
      await server.close();
    }
  });
});

describe('LOG_FORMAT', () => {
  it.each([
    [undefined, true, true],
    [undefined, false, false],
    ['', true, true],
    ['json', true, false],
    ['JSON', true, false],
    ['pretty', false, true],
    [' Pretty ', false, true],
  ])('LOG_FORMAT=%j, stdout a terminal: %j → pretty: %j', (format, terminal, pretty) => {
    expect(loadConfig({ LOG_FORMAT: format }, terminal).log.pretty).toBe(pretty);
  });

  it('refuses any other value with one line naming the variable and the choices', () => {
    expect(() => loadConfig({ LOG_FORMAT: 'colour' }, true)).toThrow(
      new ConfigError('LOG_FORMAT must be json or pretty, got "colour"'),
    );
  });
});
