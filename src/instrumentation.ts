/**
 * Loaded first, with `node --import ./dist/src/instrumentation.js dist/src/main.js`: starts
 * OpenTelemetry tracing when an OTLP endpoint is set (src/infrastructure/platform/observability/tracing.ts),
 * before the service's modules load. Without an endpoint it loads nothing more. The configuration
 * is checked as ConfigModule checks it in main.ts (validateEnvironment); an error is reported there,
 * in one line.
 */
import { ConfigError, loadConfig, readEnvFile } from './infrastructure/platform/config.js';

readEnvFile();
const endpoint = tracingEndpointOrNull();
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
