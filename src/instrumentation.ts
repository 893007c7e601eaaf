/**
 * Loaded first, and must be: `node --import ./dist/src/instrumentation.js dist/src/main.js`
 * (package.json's start:prod, the Containerfile) starts OpenTelemetry tracing when an OTLP endpoint
 * is set (src/infrastructure/platform/observability/tracing.ts) before the service's modules load,
 * since an instrumentation patches only a module loaded after it. tracing.ts keeps the SDK it
 * started in a module variable for main.ts to stop: this process has one SDK, started before any
 * Nest module exists to provide it.
 *
 * Without an endpoint variable it reads nothing more and loads nothing more: the environment is
 * then checked once, by ConfigModule in main.ts. With one, it is checked here first, as
 * ConfigModule checks it (validateEnvironment), so that the SDK never starts on a configuration
 * main.ts will refuse; the error is reported there, in one line.
 */
import { ConfigError, loadConfig, readEnvFile } from './infrastructure/platform/config.js';

readEnvFile();
const endpoint = endpointIsSet(process.env) ? tracingEndpointOrNull() : null;
if (endpoint !== null) {
  const { startTracing } = await import('./infrastructure/platform/observability/tracing.js');
  await startTracing();
}

/** Null when tracing is off, or when the configuration is wrong: main.ts then says what is wrong. */
function tracingEndpointOrNull(): string | null {
  try {
    return loadConfig().tracingEndpoint;
  } catch (error) {
    if (error instanceof ConfigError) return null;
    throw error;
  }
}

function endpointIsSet(env: NodeJS.ProcessEnv): boolean {
  return [env.OTEL_EXPORTER_OTLP_ENDPOINT, env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT].some(
    (value) => value !== undefined && value.trim() !== '',
  );
}
