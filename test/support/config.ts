import { ConfigError, loadConfig } from '../../src/infrastructure/platform/config.js';

/** The message loadConfig refuses `env` with; fails the test if it accepts it. */
export function refusal(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error(`${JSON.stringify(env)} was accepted`);
}
