import pTimeout from 'p-timeout';
/**
 * OpenTelemetry tracing, on only when an OTLP endpoint is configured (docs/observability.md).
 * Without one, nothing of the SDK is imported: every OpenTelemetry module is loaded by the
 * dynamic imports below, so the default start pays for none of it.
 *
 * `node --import ./dist/src/instrumentation.js dist/src/main.js` starts it before the service's
 * own modules load (ESM instrumentation needs its loader hook in place by then); main.ts stops it
 * at the end of the drain so the last spans are flushed.
 */

type Sdk = { shutdown(): Promise<void> };

/**
 * The process's one SDK, kept here rather than provided: it starts from instrumentation.ts, which
 * must load first (before any module it traces, Nest's included), so no Nest container exists yet.
 */
let sdk: Sdk | null = null;

/**
 * Registers the ESM loader hook and starts the SDK (the configuration's `tracingEndpoint` says
 * whether to). The SDK reads the standard OTEL_* variables itself. Call before the service's modules are loaded:
 * an instrumentation patches a module only when the module is loaded after it.
 */
export async function startTracing(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (sdk !== null) return;
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
  const stopped = running.shutdown().then(
    () => true,
    (error: unknown) => {
      warn(`tracing: the last spans were not exported: ${error instanceof Error ? error.message : String(error)}`);
      return true;
    },
  );
  const finished = await pTimeout(stopped, { milliseconds: timeoutMs, fallback: () => false });
  if (!finished) warn(`tracing: the last spans were not exported within ${timeoutMs} ms`);
}
