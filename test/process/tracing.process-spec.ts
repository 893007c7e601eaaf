import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import path from 'node:path';
import { Ajv } from 'ajv';
import { outputOf, type ProcessOutput, readiness } from '../support/process.js';
import { freePort } from '../support/server.js';
import { tempDir } from '../support/temp-dirs.js';

// The service as `npm run start:prod` runs it, against the PostgreSQL that DATABASE_URL names and
// the Redis of REDIS_URL (CI has both at these addresses).
const DATABASE_URL = process.env.DATABASE_URL ?? '';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const withDatabase = DATABASE_URL === '' ? it.skip : it;
const API_KEY = 'tracing-test-key-0123456789';

describe('tracing', () => {
  withDatabase(
    'continues a traceparent: the server span, its pg and ioredis spans and its log line share the trace, exported over OTLP/HTTP when SIGTERM flushes them',
    async () => {
      const receiver = await startOtlpReceiver();
      const port = await freePort();
      const service = startService({
        PORT: String(port),
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        // Nothing is exported on a schedule during the test: what arrives was flushed by the stop.
        OTEL_BSP_SCHEDULE_DELAY: '600000',
      });
      try {
        await readiness(port, service.output);
        const traceId = randomBytes(16).toString('hex');
        const callerSpanId = randomBytes(8).toString('hex');

        const response = await fetch(`http://127.0.0.1:${port}/v1/pets?limit=1`, {
          headers: { Authorization: `Bearer ${API_KEY}`, traceparent: `00-${traceId}-${callerSpanId}-01` },
        });
        expect(response.status).toBe(200);
        expect(receiver.spans).toEqual([]);

        service.child.kill('SIGTERM');
        expect(await service.output.exit).toBe(0);

        const trace = receiver.spans.filter((span) => span.traceId === traceId);
        const server = trace.find((span) => span.kind === SERVER_KIND);
        expect(server).toMatchObject({
          parentSpanId: callerSpanId,
          name: 'GET /v1/pets',
          serviceName: 'petstore',
          attributes: { 'http.route': '/v1/pets', 'http.response.status_code': 200 },
        });
        const inRequest = trace.filter((span) => server !== undefined && descendsFrom(span, server, trace));
        const query = inRequest.find(
          (span) => span.scope === '@opentelemetry/instrumentation-pg' && span.name.startsWith('pg.query'),
        );
        expect(query?.attributes['db.system.name']).toBe('postgresql');
        // The rate-limit counter, with the command name alone: its arguments name keys derived from API keys.
        const counter = inRequest.find((span) => span.scope === '@opentelemetry/instrumentation-ioredis');
        expect(counter?.attributes).toMatchObject({ 'db.system.name': 'redis', 'db.query.text': 'evalsha' });
        expect(trace.every((span) => span.serviceName === 'petstore')).toBe(true);
        // Probes are not traced.
        expect(receiver.spans.filter((span) => span.name.includes('/readyz'))).toEqual([]);

        const requestLine = logLines(service.output.stdout()).find(
          (line) => line.msg === 'request' && line.route === '/v1/pets',
        );
        expect(requestLine).toMatchObject({ trace_id: traceId, span_id: server?.spanId, trace_flags: '01' });
        expect(receiver.contentTypes.every((type) => type === 'application/json')).toBe(true);
        expect(await loadedModules(service)).toContainEqual(expect.stringContaining('/@opentelemetry/sdk-node/'));
        expect(service.output.stderr()).not.toMatch(/Warning/);
      } finally {
        service.child.kill('SIGKILL');
        await receiver.close();
      }
    },
  );

  withDatabase('without an OTLP endpoint loads nothing of OpenTelemetry, whatever other OTEL_* say', async () => {
    const port = await freePort();
    const service = startService({
      PORT: String(port),
      OTEL_SERVICE_NAME: 'petstore-untraced',
      OTEL_TRACES_SAMPLER: 'always_on',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    });
    try {
      await readiness(port, service.output);
      const response = await fetch(`http://127.0.0.1:${port}/v1/pets?limit=1`, {
        headers: {
          Authorization: `Bearer ${API_KEY}`,
          traceparent: `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`,
        },
      });
      expect(response.status).toBe(200);

      service.child.kill('SIGTERM');
      expect(await service.output.exit).toBe(0);

      const modules = await loadedModules(service);
      // The probe saw the service's own modules, so it would have seen these.
      expect(modules).toContainEqual(expect.stringMatching(/\/dist\/src\/main\.js$/));
      expect(modules).toContainEqual(expect.stringContaining('/node_modules/pg/'));
      // Only the API, which prom-client loads for itself (a no-op without an SDK): no SDK, no
      // instrumentation, no exporter, no loader hook.
      const tracingModules = modules.filter((url) => /\/(@opentelemetry\/(?!api\/)|import-in-the-middle\/)/.test(url));
      expect(tracingModules).toEqual([]);
      const requestLine = logLines(service.output.stdout()).find(
        (line) => line.msg === 'request' && line.route === '/v1/pets',
      );
      expect(requestLine).toBeDefined();
      expect(requestLine).not.toHaveProperty('trace_id');
    } finally {
      service.child.kill('SIGKILL');
    }
  });

  it.each([
    [
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' },
      /^Configuration error: OTEL_EXPORTER_OTLP_ENDPOINT must be an http/,
    ],
    [
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_TRACES_SAMPLER: 'sometimes' },
      /^Configuration error: OTEL_TRACES_SAMPLER must be one of /,
    ],
  ])('refuses tracing settings that cannot work with one JSON line and exit code 1: %j', async (env, message) => {
    const service = startService({ PORT: String(await freePort()), ...env });

    expect(await service.output.exit).toBe(1);
    const lines = logLines(service.output.stderr());
    expect(lines).toHaveLength(1);
    expect(lines[0]?.level).toBe(60);
    expect(lines[0]?.msg).toMatch(message);
  });
});

const SERVER_KIND = 2;

type Service = { child: ChildProcess; output: ProcessOutput; modulesFile: string };

/**
 * `node --import ./dist/src/instrumentation.js dist/src/main.js`, as start:prod runs it, with no
 * OTEL_* of the test's own environment. A probe loaded first records the URL of every module the
 * process resolves, written out when it exits.
 */
function startService(env: Record<string, string>): Service {
  const modulesFile = path.join(tempDir('petstore-tracing-'), 'modules');
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('OTEL_') && name !== 'DATABASE_URL'),
  );
  const child = spawn(
    process.execPath,
    ['--import', MODULE_PROBE, '--import', './dist/src/instrumentation.js', 'dist/src/main.js'],
    {
      env: {
        ...inherited,
        HOST: '127.0.0.1',
        API_KEYS: API_KEY,
        DATABASE_URL,
        REDIS_URL,
        LOG_FORMAT: 'json',
        SHUTDOWN_DELAY_SECONDS: '0',
        LOADED_MODULES_FILE: modulesFile,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  return { child, output: outputOf(child), modulesFile };
}

const MODULE_PROBE = `data:text/javascript,${encodeURIComponent(`
import { registerHooks } from 'node:module';
import { writeFileSync } from 'node:fs';
const loaded = new Set();
registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context);
    loaded.add(resolved.url);
    return resolved;
  },
});
process.on('exit', () => writeFileSync(process.env.LOADED_MODULES_FILE, [...loaded].join('\\n')));
`)}`;

async function loadedModules(service: Service): Promise<string[]> {
  return (await readFile(service.modulesFile, 'utf8')).split('\n');
}

type LogLine = { level?: unknown; msg?: unknown; route?: unknown; trace_id?: unknown; span_id?: unknown };

function logLines(output: string): LogLine[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line): unknown => JSON.parse(line))
    .filter((line): line is LogLine => typeof line === 'object' && line !== null);
}

type ReceivedSpan = {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  scope: string;
  serviceName: string | undefined;
  attributes: Record<string, unknown>;
};

function descendsFrom(span: ReceivedSpan, ancestor: ReceivedSpan, trace: ReceivedSpan[]): boolean {
  for (let parent = span.parentSpanId; parent !== '';) {
    if (parent === ancestor.spanId) return true;
    parent = trace.find((candidate) => candidate.spanId === parent)?.parentSpanId ?? '';
  }
  return false;
}

// OTLP/JSON (ExportTraceServiceRequest), the fields this test reads.
type OtlpAttribute = { key: string; value: Record<string, unknown> };
type ExportTraceRequest = {
  resourceSpans: {
    resource?: { attributes?: OtlpAttribute[] };
    scopeSpans: {
      scope?: { name: string };
      spans: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind: number;
        attributes?: OtlpAttribute[];
      }[];
    }[];
  }[];
};
const attributesSchema = {
  type: 'array',
  items: {
    type: 'object',
    required: ['key', 'value'],
    properties: { key: { type: 'string' }, value: { type: 'object' } },
  },
};
const isExportTraceRequest = new Ajv().compile<ExportTraceRequest>({
  type: 'object',
  required: ['resourceSpans'],
  properties: {
    resourceSpans: {
      type: 'array',
      items: {
        type: 'object',
        required: ['scopeSpans'],
        properties: {
          resource: { type: 'object', properties: { attributes: attributesSchema } },
          scopeSpans: {
            type: 'array',
            items: {
              type: 'object',
              required: ['spans'],
              properties: {
                scope: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
                spans: {
                  type: 'array',
                  items: {
                    type: 'object',
                    required: ['traceId', 'spanId', 'name', 'kind'],
                    properties: {
                      traceId: { type: 'string' },
                      spanId: { type: 'string' },
                      parentSpanId: { type: 'string' },
                      name: { type: 'string' },
                      kind: { type: 'integer' },
                      attributes: attributesSchema,
                    },
                  },
                },
              },
            },
          },
        },
      },
    },
  },
});

/** An OTLP attribute list as a plain record; intValue comes as a string or a number. */
function attributeRecord(attributes: OtlpAttribute[] = []): Record<string, unknown> {
  return Object.fromEntries(
    attributes.map(({ key, value }) => {
      const [kind, given] = Object.entries(value)[0] ?? [];
      return [key, kind === 'intValue' ? Number(given) : given];
    }),
  );
}

type OtlpReceiver = { url: string; spans: ReceivedSpan[]; contentTypes: string[]; close(): Promise<void> };

/** A collector's OTLP/HTTP trace endpoint, POST /v1/traces, for the JSON encoding. */
async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      contentTypes.push(request.headers['content-type'] ?? '');
      const body: unknown =
        request.headers['content-type'] === 'application/json' ? JSON.parse(Buffer.concat(chunks).toString()) : null;
      if (request.method !== 'POST' || request.url !== '/v1/traces' || !isExportTraceRequest(body)) {
        response.writeHead(400).end();
        return;
      }
      for (const { resource, scopeSpans } of body.resourceSpans) {
        const serviceName = attributeRecord(resource?.attributes)['service.name'];
        for (const { scope, spans: scoped } of scopeSpans)
          for (const span of scoped)
            spans.push({
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId ?? '',
              name: span.name,
              kind: span.kind,
              scope: scope?.name ?? '',
              serviceName: typeof serviceName === 'string' ? serviceName : undefined,
              attributes: attributeRecord(span.attributes),
            });
      }
      response.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the receiver has no TCP address');
  return {
    url: `http://127.0.0.1:${address.port}`,
    spans,
    contentTypes,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
