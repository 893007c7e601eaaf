/**
 * OpenTelemetry tracing, on only when an OTLP endpoint is configured (docs/observability.md).
 * Without one, nothing of the SDK is imported: every OpenTelemetry module is loaded by the
 * dynamic imports below, so the default start pays for none of it.
 *
 * `node --import ./dist/src/instrumentation.js dist/src/main.js` starts it before the service's
 * own modules load (ESM instrumentation needs its loader hook in place by then); main.ts stops it
 * at the end of the drain so the last spans are flushed.
 */

import { readFileSync } from 'node:fs';
import { parseEnv } from 'node:util';

type Sdk = { shutdown(): Promise<void> };

let sdk: Sdk | null = null;

/**
 * The OTEL_* settings of a `.env` file that the environment does not already set. The service's
 * configuration reads `.env` only once its modules load, too late for tracing, and the
 * environment wins there as well.
 */
export function tracingSettingsFromEnvFile(file: string, env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if (typeof error === 'object' && error !== null && 'code' in error && error.code === 'ENOENT') return {};
    throw error;
  }
  return Object.fromEntries(
    Object.entries(parseEnv(text)).filter(
      (entry): entry is [string, string] =>
        entry[0].startsWith('OTEL_') && entry[1] !== undefined && env[entry[0]] === undefined,
    ),
  );
}

/** The settings that turn tracing on: either endpoint, per the OTLP exporter specification. */
export function tracingEndpoint(env: NodeJS.ProcessEnv = process.env): string | null {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return null;
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  return endpoint === undefined || endpoint === '' ? null : endpoint;
}

/** Why the OTEL_* settings cannot work, in one line, or null when they can. */
export function tracingSettingsProblem(env: NodeJS.ProcessEnv = process.env): string | null {
  for (const name of ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_ENDPOINT'] as const) {
    const value = env[name]?.trim();
    if (value === undefined || value === '') continue;
    const url = URL.parse(value);
    if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:'))
      return `${name} must be an http:// or https:// URL, such as http://collector:4318 (got "${value}")`;
  }
  const protocols = ['http/protobuf', 'http/json', 'grpc'];
  for (const name of ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'OTEL_EXPORTER_OTLP_PROTOCOL'] as const) {
    const value = env[name]?.trim();
    if (value !== undefined && value !== '' && !protocols.includes(value))
      return `${name} must be one of ${protocols.join(', ')} (got "${value}")`;
  }
  const samplers = [
    'always_on',
    'always_off',
    'traceidratio',
    'parentbased_always_on',
    'parentbased_always_off',
    'parentbased_traceidratio',
  ];
  const sampler = env.OTEL_TRACES_SAMPLER?.trim();
  if (sampler !== undefined && sampler !== '' && !samplers.includes(sampler))
    return `OTEL_TRACES_SAMPLER must be one of ${samplers.join(', ')} (got "${sampler}")`;
  const ratio = env.OTEL_TRACES_SAMPLER_ARG?.trim();
  if (sampler?.endsWith('traceidratio') && ratio !== undefined && ratio !== '') {
    const value = Number(ratio);
    if (!Number.isFinite(value) || value < 0 || value > 1)
      return `OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1 for ${sampler} (got "${ratio}")`;
  }
  return null;
}

/**
 * Registers the ESM loader hook and starts the SDK. Call before the service's modules are loaded:
 * an instrumentation patches a module only when the module is loaded after it.
 */
export async function startTracing(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (sdk !== null || tracingEndpoint(env) === null) return;
  await registerLoaderHook();
  const [
    { NodeSDK },
    { defaultResource, resourceFromAttributes },
    { ATTR_SERVICE_NAME },
    { HttpInstrumentation },
    { ExpressInstrumentation, ExpressLayerType },
    { PgInstrumentation },
    { IORedisInstrumentation },
    { PinoInstrumentation },
  ] = await Promise.all([
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/semantic-conventions'),
    import('@opentelemetry/instrumentation-http'),
    import('@opentelemetry/instrumentation-express'),
    import('@opentelemetry/instrumentation-pg'),
    import('@opentelemetry/instrumentation-ioredis'),
    import('@opentelemetry/instrumentation-pino'),
  ]);
  // Metrics are served at /metrics and logs written to stdout: the SDK exports them too only when
  // the operator asks for it with the standard variables.
  const sendLogs = isSet(env.OTEL_LOGS_EXPORTER) && env.OTEL_LOGS_EXPORTER?.trim() !== 'none';
  const started = new NodeSDK({
    // OTEL_SERVICE_NAME, or service.name in OTEL_RESOURCE_ATTRIBUTES, still wins over this default.
    resource: defaultResource().merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: 'petstore' })),
    ...(isSet(env.OTEL_METRICS_EXPORTER) ? {} : { metricReaders: [] }),
    ...(sendLogs ? {} : { logRecordProcessors: [] }),
    instrumentations: [
      new HttpInstrumentation({
        // Probes and scrapes arrive every few seconds; as traces they would bury the requests.
        ignoreIncomingRequestHook: (request) => UNTRACED_PATHS.has(request.url?.split('?')[0] ?? ''),
      }),
      // Route handlers only: Nest's middleware are anonymous functions, a span each said little.
      // (@opentelemetry/instrumentation-nestjs-core supports Nest up to 11, not this Nest 12.)
      new ExpressInstrumentation({ ignoreLayersType: [ExpressLayerType.MIDDLEWARE] }),
      // Only queries made while serving a request: the periodic replica and pool checks would
      // each be a trace of their own.
      new PgInstrumentation({ requireParentSpan: true }),
      // The command name only: its arguments name rate-limit keys derived from API keys.
      new IORedisInstrumentation({ requireParentSpan: true, dbStatementSerializer: (command) => command }),
      // trace_id, span_id and trace_flags on every line written inside a span.
      new PinoInstrumentation({ disableLogSending: !sendLogs }),
    ],
  });
  started.start();
  sdk = started;
}

const UNTRACED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

function isSet(value: string | undefined): boolean {
  return value !== undefined && value.trim() !== '';
}

/**
 * import-in-the-middle's in-thread hook (module.registerHooks) where Node has a working one; else
 * the loader thread of module.register, which Node 26 deprecates and so warns about.
 */
async function registerLoaderHook(): Promise<void> {
  const hooks = await import('import-in-the-middle/register-hooks.mjs');
  if (hooks.supportsSyncHooks()) {
    hooks.register();
    return;
  }
  const { register } = await import('node:module');
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url);
}

/**
 * Flushes the spans still buffered and stops the SDK, within `timeoutMs` (an unreachable collector
 * must not hold up the exit). A no-op without tracing.
 */
export async function stopTracing(timeoutMs: number, warn: (line: string) => void): Promise<void> {
  const running = sdk;
  if (running === null) return;
  sdk = null;
  let timer: NodeJS.Timeout | undefined;
  const stopped = running.shutdown().then(
    () => true,
    (error: unknown) => {
      warn(`tracing: the last spans were not exported: ${error instanceof Error ? error.message : String(error)}`);
      return true;
    },
  );
  const finished = await Promise.race([
    stopped,
    new Promise<boolean>((resolve) => (timer = setTimeout(resolve, timeoutMs, false))),
  ]);
  clearTimeout(timer);
  if (!finished) warn(`tracing: the last spans were not exported within ${timeoutMs} ms`);
}
