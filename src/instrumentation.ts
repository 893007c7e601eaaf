/**
 * Loaded first, with `node --import ./dist/src/instrumentation.js dist/src/main.js`: starts
 * OpenTelemetry tracing when an OTLP endpoint is set (src/platform/observability/tracing.ts), before the service's
 * modules load. Without an endpoint it does nothing and loads nothing more.
 */
import {
  startTracing,
  tracingEndpoint,
  tracingSettingsFromEnvFile,
  tracingSettingsProblem,
} from './platform/observability/tracing.js';

Object.assign(process.env, tracingSettingsFromEnvFile('.env'));
if (tracingEndpoint() !== null) {
  const problem = tracingSettingsProblem();
  if (problem !== null) await refuseToStart(`Configuration error: ${problem}`);
  await startTracing();
}

/** One line, in the configured log format, then exit code 1: as main.ts reports its own configuration errors. */
async function refuseToStart(line: string): Promise<never> {
  if (process.env.LOG_FORMAT?.trim().toLowerCase() === 'pretty') process.stderr.write(`${line}\n`);
  else {
    const { startupLogger } = await import('./platform/observability/logging.js');
    startupLogger({ level: 'info', pretty: false }, 2).fatal(line);
  }
  process.exit(1);
}
