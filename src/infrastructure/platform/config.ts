import { existsSync, readFileSync } from 'node:fs';
import { parseEnv } from 'node:util';
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

  /** `pretty`: the log format the failure is told in (LOG_FORMAT's, or JSON when LOG_FORMAT is what is wrong). */
  constructor(
    message: string,
    readonly pretty = false,
  ) {
    super(message);
  }
}

/** process.env is the process's, so is the one reading of .env into it: every entry point asks, the first reads. */
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
export function validateEnvironment(
  env: Record<string, unknown>,
  stdoutIsTerminal = process.stdout.isTTY === true,
): EnvironmentVariables {
  const variables = plainToInstance(EnvironmentVariables, env, { exposeUnsetFields: false });
  const errors = validateSync(variables, { stopAtFirstError: true });
  if (errors.length > 0) {
    const logFormatIsWrong = errors.some((error) => error.property === 'LOG_FORMAT');
    throw new ConfigError(
      errors.flatMap((error) => Object.values(error.constraints ?? {})).join('; '),
      !logFormatIsWrong && prettyLog(variables.LOG_FORMAT, stdoutIsTerminal),
    );
  }
  return variables;
}

/** Where the configuration is injected from: `inject: [petstoreConfig.KEY]` (ConfigurationModule provides it). */
export const petstoreConfig = { KEY: 'petstore-config' } as const;

/** One validated variable, by name: ConfigService's, or an EnvironmentVariables' own. */
export type VariableReader = <Name extends keyof EnvironmentVariables>(name: Name) => EnvironmentVariables[Name];

/**
 * The validated variables shaped into Config, read one by one: from ConfigService in the app
 * (ConfigModule has validated them once), from validateEnvironment() elsewhere (loadConfig).
 * `stdoutIsTerminal` decides the log format when LOG_FORMAT does not.
 */
export function configOf(variable: VariableReader, stdoutIsTerminal: boolean): Config {
  return {
    port: variable('PORT'),
    host: variable('HOST'),
    databaseUrl: variable('DATABASE_URL') ?? null,
    dataDir: variable('DATA_DIR'),
    apiKeys: variable('API_KEYS'),
    publicBaseUrl: withoutTrailingSlash(variable('PUBLIC_BASE_URL')),
    stagingBaseUrl: withoutTrailingSlash(variable('STAGING_BASE_URL')),
    cursorSecret: variable('CURSOR_SECRET') ?? null,
    rateLimit:
      variable('RATE_LIMIT') === 'on'
        ? {
            perKeyPerMinute: variable('RATE_LIMIT_PER_MINUTE'),
            failedAuthenticationsPerMinute: variable('AUTH_FAILURES_PER_MINUTE'),
          }
        : null,
    redisUrl: variable('REDIS_URL') ?? null,
    apiKeyCacheSeconds: variable('API_KEY_CACHE_SECONDS'),
    log: { level: variable('LOG_LEVEL'), pretty: prettyLog(variable('LOG_FORMAT'), stdoutIsTerminal) },
    shutdownTimeoutSeconds: variable('SHUTDOWN_TIMEOUT_SECONDS'),
    shutdownDelaySeconds: variable('SHUTDOWN_DELAY_SECONDS'),
    databaseWaitSeconds: variable('DATABASE_WAIT_SECONDS'),
    trustedProxies: variable('TRUSTED_PROXIES'),
    databaseReplicaUrls: variable('DATABASE_REPLICA_URLS'),
    databaseReplicaMaxLagSeconds: variable('DATABASE_REPLICA_MAX_LAG_SECONDS'),
    corsOrigins: variable('CORS_ORIGINS'),
    tracingEndpoint: tracingEndpointOf({
      OTEL_SDK_DISABLED: variable('OTEL_SDK_DISABLED'),
      OTEL_EXPORTER_OTLP_ENDPOINT: variable('OTEL_EXPORTER_OTLP_ENDPOINT'),
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: variable('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'),
    }),
  };
}

/**
 * The environment checked by validateEnvironment() and shaped into Config: what the entry points
 * that start without Nest read (the command-line tools, the TypeORM CLI), and the tests. Throws
 * ConfigError.
 */
export function loadConfig(env: Record<string, unknown> = process.env, stdoutIsTerminal = false): Config {
  const variables = validateEnvironment(env, stdoutIsTerminal);
  return configOf((name) => variables[name], stdoutIsTerminal);
}

/** The servers of the OpenAPI document are written without a trailing slash (`/` stays `/`). */
function withoutTrailingSlash(url: string | undefined): string | null {
  return url === undefined ? null : url.replace(/(.)\/+$/, '$1');
}

/**
 * The log format, from LOG_FORMAT as its rule has read it (trimmed, lower-cased, json or pretty).
 * Unset: pretty when stdout is a terminal (a person reads it), JSON anywhere else (a collector
 * parses it).
 */
function prettyLog(format: string | undefined, stdoutIsTerminal: boolean): boolean {
  return format === undefined ? stdoutIsTerminal : format === 'pretty';
}
