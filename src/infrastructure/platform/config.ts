import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { parseEnv } from 'node:util';
import { registerAs } from '@nestjs/config';
import { propertyOf } from './property-of.js';

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

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export class ConfigError extends Error {
  override name = 'ConfigError';
}

let envFileRead = false;

/**
 * `.env` into process.env, once per process, real environment variables winning. Every entry
 * point calls it before it reads the configuration: instrumentation.ts (tracing starts before
 * NestJS loads), main.ts, keys.ts and the TypeORM CLI's ormconfig.ts; ConfigModule reads no file.
 */
export function readEnvFile(file = '.env'): void {
  if (envFileRead) return;
  envFileRead = true;
  Object.assign(process.env, envFileSettings(file, process.env));
}

/** The settings of an env file that `env` does not already set; none when there is no file. */
export function envFileSettings(file: string, env: NodeJS.ProcessEnv): Record<string, string> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if (propertyOf(error, 'code') === 'ENOENT') return {};
    throw error;
  }
  return Object.fromEntries(
    Object.entries(parseEnv(text)).filter(
      (entry): entry is [string, string] => entry[1] !== undefined && env[entry[0]] === undefined,
    ),
  );
}

/**
 * The configuration as a @nestjs/config namespace, checked all at once by the same pure loader
 * that tracing and the command-line tools use. Inject it with `@Inject(petstoreConfig.KEY)`.
 */
export const petstoreConfig = registerAs('petstore', (): Config => loadConfig(process.env, process.stdout.isTTY));

/**
 * Reads and checks the environment once. Throws ConfigError naming the variable at fault.
 * `stdoutIsTerminal` decides the log format when LOG_FORMAT does not.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, stdoutIsTerminal = false): Config {
  const port = readPort(env.PORT);
  const host = readHost(env.HOST);
  const databaseUrl = readDatabaseUrl(env.DATABASE_URL);
  const databaseReplicaUrls = (env.DATABASE_REPLICA_URLS ?? '')
    .split(',')
    .flatMap((url, i) => readDatabaseUrl(url, `DATABASE_REPLICA_URLS (URL ${i + 1})`) ?? []);
  if (databaseReplicaUrls.length > 0 && databaseUrl === null)
    throw new ConfigError('DATABASE_REPLICA_URLS needs DATABASE_URL: the embedded database has no replicas');
  return {
    port,
    host,
    databaseUrl,
    dataDir: nonEmpty(env.DATA_DIR) ?? './data',
    apiKeys: readApiKeys(env.API_KEYS),
    // Relative, so that Swagger UI's "Try it out" calls the host and port the page came from.
    publicBaseUrl: readUrl('PUBLIC_BASE_URL', env.PUBLIC_BASE_URL),
    stagingBaseUrl: readUrl('STAGING_BASE_URL', env.STAGING_BASE_URL),
    cursorSecret: nonEmpty(env.CURSOR_SECRET),
    rateLimit: readSwitch('RATE_LIMIT', env.RATE_LIMIT)
      ? {
          perKeyPerMinute: readPositiveInteger('RATE_LIMIT_PER_MINUTE', env.RATE_LIMIT_PER_MINUTE, 1200),
          failedAuthenticationsPerMinute: readPositiveInteger(
            'AUTH_FAILURES_PER_MINUTE',
            env.AUTH_FAILURES_PER_MINUTE,
            20,
          ),
        }
      : null,
    redisUrl: readRedisUrl(env.REDIS_URL),
    apiKeyCacheSeconds: readPositiveInteger('API_KEY_CACHE_SECONDS', env.API_KEY_CACHE_SECONDS, 5),
    log: { level: readLogLevel(env.LOG_LEVEL), pretty: readLogFormat(env.LOG_FORMAT, stdoutIsTerminal) === 'pretty' },
    shutdownTimeoutSeconds: readPositiveInteger('SHUTDOWN_TIMEOUT_SECONDS', env.SHUTDOWN_TIMEOUT_SECONDS, 10),
    shutdownDelaySeconds: readNonNegativeInteger('SHUTDOWN_DELAY_SECONDS', env.SHUTDOWN_DELAY_SECONDS, 0),
    databaseWaitSeconds: readNonNegativeInteger('DATABASE_WAIT_SECONDS', env.DATABASE_WAIT_SECONDS, 30),
    trustedProxies: readTrustedProxies(env.TRUSTED_PROXIES),
    databaseReplicaUrls,
    databaseReplicaMaxLagSeconds: readPositiveSeconds(
      'DATABASE_REPLICA_MAX_LAG_SECONDS',
      env.DATABASE_REPLICA_MAX_LAG_SECONDS,
      2,
    ),
    corsOrigins: readCorsOrigins(env.CORS_ORIGINS),
    tracingEndpoint: readTracingEndpoint(env),
  };
}

/** The endpoint when tracing is on, once every OTEL_* setting the service checks can work. */
function readTracingEndpoint(env: NodeJS.ProcessEnv): string | null {
  const endpoint = tracingEndpoint(env);
  const problem = endpoint === null ? null : tracingSettingsProblem(env);
  if (problem !== null) throw new ConfigError(problem);
  return endpoint;
}

/** The settings that turn tracing on: either endpoint, per the OTLP exporter specification. */
function tracingEndpoint(env: NodeJS.ProcessEnv): string | null {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return null;
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  return endpoint === undefined || endpoint === '' ? null : endpoint;
}

/** Why the OTEL_* settings cannot work, in one line, or null when they can. */
function tracingSettingsProblem(env: NodeJS.ProcessEnv): string | null {
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

function nonEmpty(value: string | undefined): string | null {
  return value === undefined || value.trim() === '' ? null : value.trim();
}

function readPort(value: string | undefined): number {
  const text = nonEmpty(value);
  if (text === null) return 3000;
  const port = Number(text);
  if (!/^\d+$/.test(text) || port > 65535) {
    throw new ConfigError(`PORT must be an integer from 0 to 65535, got "${text}"`);
  }
  return port;
}

function readHost(value: string | undefined): string {
  const host = nonEmpty(value) ?? '0.0.0.0';
  if (isIP(host) === 0 && !/^[A-Za-z0-9.-]+$/.test(host)) {
    throw new ConfigError(`HOST must be an IP address or a host name, got "${host}"`);
  }
  return host;
}

function readDatabaseUrl(value: string | undefined, name = 'DATABASE_URL'): string | null {
  const text = nonEmpty(value);
  if (text === null) return null;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    // The URL may hold a password: never echo it.
    throw new ConfigError(`${name} is not a valid URL (expected postgres://user:password@host:port/database)`);
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new ConfigError(`${name} must start with postgres:// or postgresql://, got "${url.protocol}//"`);
  }
  return text;
}

/** Seconds, fractions allowed (0.5), more than 0. */
function readPositiveSeconds(name: string, value: string | undefined, fallback: number): number {
  const text = nonEmpty(value);
  if (text === null) return fallback;
  if (!/^\d{1,6}(\.\d{1,3})?$/.test(text) || Number(text) <= 0)
    throw new ConfigError(`${name} must be a number of seconds above 0, got "${text}"`);
  return Number(text);
}

function readUrl(name: string, value: string | undefined): string | null {
  const text = nonEmpty(value);
  if (text === null) return null;
  const path = /^\/[^\s]*$/.test(text);
  if (!path && (!URL.canParse(text) || !/^https?:$/.test(new URL(text).protocol))) {
    throw new ConfigError(`${name} must be an absolute http(s) URL or a path such as /v1, got "${text}"`);
  }
  return text.replace(/(.)\/+$/, '$1');
}

function readSwitch(name: string, value: string | undefined): boolean {
  const text = (nonEmpty(value) ?? 'on').toLowerCase();
  if (text === 'on' || text === 'true' || text === '1') return true;
  if (text === 'off' || text === 'false' || text === '0') return false;
  throw new ConfigError(`${name} must be on or off, got "${text}"`);
}

function readPositiveInteger(name: string, value: string | undefined, fallback: number): number {
  const text = nonEmpty(value);
  if (text === null) return fallback;
  if (!/^\d{1,9}$/.test(text) || Number(text) < 1)
    throw new ConfigError(`${name} must be a positive integer, got "${text}"`);
  return Number(text);
}

/** Keys a client can present: the guard reads `Bearer <visible ASCII>`, so a key with anything else would never match. */
function readApiKeys(value: string | undefined): string[] {
  const keys = commaList(value);
  const unusable = keys.findIndex((key) => !/^[\x21-\x7e]+$/.test(key));
  if (unusable >= 0)
    throw new ConfigError(
      `API_KEYS: key ${unusable + 1} holds a space or a character other than visible ASCII, so no client could send it`,
    );
  return keys;
}

/** The non-empty, trimmed items of a comma-separated setting. */
function commaList(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item.length > 0);
}

function readNonNegativeInteger(name: string, value: string | undefined, fallback: number): number {
  const text = nonEmpty(value);
  if (text === null) return fallback;
  if (!/^\d{1,9}$/.test(text)) throw new ConfigError(`${name} must be a whole number, got "${text}"`);
  return Number(text);
}

/** Comma-separated IPv4/IPv6 addresses or CIDRs, as Express's `trust proxy` takes them. */
function readTrustedProxies(value: string | undefined): string[] {
  const entries = commaList(value);
  for (const entry of entries) {
    const [address = '', prefix, extra] = entry.split('/');
    const family = isIP(address);
    const bits = family === 4 ? 32 : 128;
    const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= bits);
    if (family === 0 || !prefixOk || extra !== undefined) {
      throw new ConfigError(`TRUSTED_PROXIES must list IP addresses or CIDRs (such as 10.0.0.0/8), got "${entry}"`);
    }
  }
  return entries;
}

/** Comma-separated origins, each exactly as a browser sends it in `Origin`: no path, no trailing slash. */
function readCorsOrigins(value: string | undefined): string[] {
  const entries = commaList(value);
  for (const entry of entries) {
    const origin = URL.canParse(entry) ? new URL(entry) : null;
    if (origin === null || !/^https?:$/.test(origin.protocol) || origin.origin !== entry) {
      throw new ConfigError(
        `CORS_ORIGINS must list origins such as https://app.example or http://localhost:8080 (scheme, host and port only), got "${entry}"`,
      );
    }
  }
  return entries;
}

function readRedisUrl(value: string | undefined): string | null {
  const text = nonEmpty(value);
  if (text === null) return null;
  if (!URL.canParse(text) || !/^rediss?:$/.test(new URL(text).protocol)) {
    throw new ConfigError('REDIS_URL must be a redis:// or rediss:// URL');
  }
  return text;
}

function readLogLevel(value: string | undefined): LogLevel {
  const text = (nonEmpty(value) ?? 'info').toLowerCase();
  const level = LOG_LEVELS.find((known) => known === text);
  if (level === undefined) throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${text}"`);
  return level;
}

export type LogFormat = 'json' | 'pretty';

/**
 * LOG_FORMAT when set. Unset: pretty when stdout is a terminal (a person reads it), JSON anywhere
 * else (a collector parses it). null: a value that is neither.
 */
export function logFormatOf(value: string | undefined, stdoutIsTerminal: boolean): LogFormat | null {
  const text = nonEmpty(value)?.toLowerCase();
  if (text === undefined) return stdoutIsTerminal ? 'pretty' : 'json';
  return text === 'json' || text === 'pretty' ? text : null;
}

function readLogFormat(value: string | undefined, stdoutIsTerminal: boolean): LogFormat {
  const format = logFormatOf(value, stdoutIsTerminal);
  if (format === null) throw new ConfigError(`LOG_FORMAT must be json or pretty, got "${String(value).trim()}"`);
  return format;
}
