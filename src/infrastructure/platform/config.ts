import { existsSync, readFileSync } from 'node:fs';
import { parseEnv } from 'node:util';
import { registerAs } from '@nestjs/config';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { EnvironmentVariables, type LogLevel, tracingEndpointOf } from './config/environment-variables.js';

export type Config = {
  port: number;
  host: string;
  /** null: start the embedded PostgreSQL kept in `dataDir`. */
  databaseUrl: string | null;
  dataDir: string;
  apiKeys: string[];
  /** The two servers of the OpenAPI document; null: the API's own relative path. */
  publicBaseUrl: string | null;
  stagingBaseUrl: string | null;
  /** Signs paging cursors; null: a secret kept in the database, so cursors hold on every instance and across restarts. */
  cursorSecret: string | null;
  /** null: RATE_LIMIT=off. */
  rateLimit: { perKeyPerMinute: number; failedAuthenticationsPerMinute: number } | null;
  /** null: rate-limit counters are kept per process. */
  redisUrl: string | null;
  /** How long a stored key's verdict is cached: a revoked key stops working within this. */
  apiKeyCacheSeconds: number;
  log: { level: LogLevel; pretty: boolean };
  /** How long in-flight requests may take to finish after SIGTERM/SIGINT. */
  shutdownTimeoutSeconds: number;
  /** After SIGTERM/SIGINT, how long the service keeps serving with /readyz at 503 before it stops accepting. */
  shutdownDelaySeconds: number;
  /** How long a start waits, retrying with back-off, for a database that does not answer yet. */
  databaseWaitSeconds: number;
  /**
   * Addresses or CIDRs of proxies whose X-Forwarded-For is believed (Express's `trust proxy`);
   * empty: the client address is the socket's peer and no header is trusted.
   */
  trustedProxies: string[];
  /** Streaming replicas that serve list and get; empty: every read goes to DATABASE_URL. */
  databaseReplicaUrls: string[];
  /** A replica further behind the primary than this serves no reads until it catches up. */
  databaseReplicaMaxLagSeconds: number;
  /** Exact origins (scheme, host, port) a browser page may call the API from; empty: CORS off. */
  corsOrigins: string[];
  /** The OTLP endpoint traces go to (OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT); null: no tracing SDK is loaded. */
  tracingEndpoint: string | null;
};

export class ConfigError extends Error {
  override name = 'ConfigError';
}

let envFileRead = false;

/**
 * `.env` into process.env, once per process, real environment variables winning. Every entry
 * point calls it before it reads the configuration, and main.ts before app.module.ts loads:
 * instrumentation.ts (tracing starts before NestJS loads), main.ts, and through cli.ts the
 * command-line tools and the TypeORM CLI's ormconfig.ts. ConfigModule reads no file.
 */
export function readEnvFile(file = '.env'): void {
  if (envFileRead) return;
  envFileRead = true;
  Object.assign(process.env, envFileSettings(file, process.env));
}

/** The settings of an env file that `env` does not already set; none when there is no file. */
export function envFileSettings(file: string, env: NodeJS.ProcessEnv): Record<string, string> {
  if (!existsSync(file)) return {};
  return Object.fromEntries(
    Object.entries(parseEnv(readFileSync(file, 'utf8'))).filter(
      (entry): entry is [string, string] => entry[1] !== undefined && env[entry[0]] === undefined,
    ),
  );
}

/**
 * ConfigModule.forRoot's `validate` (Nest's "custom validate function"): the environment as
 * EnvironmentVariables, defaults in place, or a ConfigError in one line naming every variable that
 * is wrong, in the class's order. A DATABASE_URL or a key is never quoted.
 */
export function validateEnvironment(env: Record<string, unknown>): EnvironmentVariables {
  const variables = plainToInstance(EnvironmentVariables, env, { exposeUnsetFields: false });
  const errors = validateSync(variables, { stopAtFirstError: true });
  if (errors.length > 0)
    throw new ConfigError(errors.flatMap((error) => Object.values(error.constraints ?? {})).join('; '));
  return variables;
}

/**
 * The configuration as a @nestjs/config namespace: inject it with `@Inject(petstoreConfig.KEY)`.
 * ConfigModule's `validate` has checked the environment by the time this is built (and put the
 * defaults in process.env); this shapes the same variables into Config.
 */
export const petstoreConfig = registerAs('petstore', (): Config => loadConfig(process.env, process.stdout.isTTY));

/**
 * The environment checked by validateEnvironment() and shaped into Config: what the entry points
 * that start without Nest read (tracing, the command-line tools, the TypeORM CLI). Throws
 * ConfigError. `stdoutIsTerminal` decides the log format when LOG_FORMAT does not.
 */
export function loadConfig(env: Record<string, unknown> = process.env, stdoutIsTerminal = false): Config {
  const variables = validateEnvironment(env);
  return {
    port: variables.PORT,
    host: variables.HOST,
    databaseUrl: variables.DATABASE_URL ?? null,
    dataDir: variables.DATA_DIR,
    apiKeys: variables.API_KEYS,
    publicBaseUrl: withoutTrailingSlash(variables.PUBLIC_BASE_URL),
    stagingBaseUrl: withoutTrailingSlash(variables.STAGING_BASE_URL),
    cursorSecret: variables.CURSOR_SECRET ?? null,
    rateLimit:
      variables.RATE_LIMIT === 'on'
        ? {
            perKeyPerMinute: variables.RATE_LIMIT_PER_MINUTE,
            failedAuthenticationsPerMinute: variables.AUTH_FAILURES_PER_MINUTE,
          }
        : null,
    redisUrl: variables.REDIS_URL ?? null,
    apiKeyCacheSeconds: variables.API_KEY_CACHE_SECONDS,
    log: { level: variables.LOG_LEVEL, pretty: logFormatOf(variables.LOG_FORMAT, stdoutIsTerminal) === 'pretty' },
    shutdownTimeoutSeconds: variables.SHUTDOWN_TIMEOUT_SECONDS,
    shutdownDelaySeconds: variables.SHUTDOWN_DELAY_SECONDS,
    databaseWaitSeconds: variables.DATABASE_WAIT_SECONDS,
    trustedProxies: variables.TRUSTED_PROXIES,
    databaseReplicaUrls: variables.DATABASE_REPLICA_URLS,
    databaseReplicaMaxLagSeconds: variables.DATABASE_REPLICA_MAX_LAG_SECONDS,
    corsOrigins: variables.CORS_ORIGINS,
    tracingEndpoint: tracingEndpointOf(variables),
  };
}

/** The servers of the OpenAPI document are written without a trailing slash (`/` stays `/`). */
function withoutTrailingSlash(url: string | undefined): string | null {
  return url === undefined ? null : url.replace(/(.)\/+$/, '$1');
}

export type LogFormat = 'json' | 'pretty';

/**
 * LOG_FORMAT when set. Unset: pretty when stdout is a terminal (a person reads it), JSON anywhere
 * else (a collector parses it). null: a value that is neither (main.ts still needs a format to say so in).
 */
export function logFormatOf(value: string | undefined, stdoutIsTerminal: boolean): LogFormat | null {
  const text = value?.trim().toLowerCase();
  if (text === undefined || text === '') return stdoutIsTerminal ? 'pretty' : 'json';
  return text === 'json' || text === 'pretty' ? text : null;
}
