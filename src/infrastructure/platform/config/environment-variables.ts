import { isIP } from 'node:net';
import {
  ArrayMaxSize,
  IsIn,
  IsInt,
  IsNumber,
  IsOptional,
  IsPositive,
  IsString,
  Matches,
  Max,
  Min,
  ValidateIf,
  type ValidationArguments,
  type ValidationOptions,
} from 'class-validator';
import {
  firstFailing,
  IsHttpUrlOrPath,
  IsPostgresUrl,
  IsUrlWithScheme,
  isAddressOrCidr,
  isOrigin,
  LowerCased,
  mustBe,
  postgresUrlProblem,
  Satisfies,
  ToDecimal,
  ToInteger,
  ToList,
  ToNumber,
  ToSwitch,
  Trimmed,
} from './rules.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const OTLP_PROTOCOLS = ['http/protobuf', 'http/json', 'grpc'];
const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
];

const VISIBLE_ASCII = /^[\x21-\x7e]+$/;
const isPostgresUrl = (url: string) => postgresUrlProblem(url) === null;

// Nine digits: a count or a number of seconds longer than that is a typo.
const LARGEST = 999_999_999;
const PORT = mustBe('an integer from 0 to 65535');
const POSITIVE = mustBe('a positive integer');
const WHOLE = mustBe('a whole number');
const SECONDS = mustBe('a number of seconds above 0');
const HTTP_URL_OR_PATH = mustBe('an absolute http(s) URL or a path such as /v1');
const RATIO: ValidationOptions = {
  message: ({ object, value }: ValidationArguments) =>
    `OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1 for ${samplerOf(object)} (got "${String(value)}")`,
};

/**
 * Every environment variable the service reads, with its rule and its default (a property without
 * one is optional). A blank value counts as unset. `validateEnvironment()` checks them: it is
 * ConfigModule's `validate`, and what the entry points that start without Nest call too.
 * README.md's "Configuration" table and .env.example list the same variables, and a test holds them
 * to it.
 */
export class EnvironmentVariables {
  @ToInteger()
  @IsInt(PORT)
  @Min(0, PORT)
  @Max(65535, PORT)
  PORT = 3000;

  /** An IP address, or else a host name. */
  @Trimmed()
  @ValidateIf((_, host: string) => isIP(host) === 0)
  @Matches(/^[A-Za-z0-9.-]+$/, mustBe('an IP address or a host name'))
  HOST = '0.0.0.0';

  /** Unset: an embedded PostgreSQL kept in DATA_DIR. */
  @Trimmed()
  @IsOptional()
  @IsPostgresUrl()
  DATABASE_URL?: string;

  @Trimmed()
  @IsString()
  DATA_DIR = './data';

  /** Streaming replicas of DATABASE_URL's server, serving list and get. */
  @ToList()
  @ArrayMaxSize(0, {
    validateIf: (env: EnvironmentVariables) => env.DATABASE_URL === undefined,
    message: 'DATABASE_REPLICA_URLS needs DATABASE_URL: the embedded database has no replicas',
  })
  @Satisfies('isPostgresUrl', isPostgresUrl, {
    each: true,
    message: ({ value }: ValidationArguments) => {
      const { item, position } = firstFailing(value, isPostgresUrl);
      return `DATABASE_REPLICA_URLS (URL ${position}) ${postgresUrlProblem(item) ?? ''}`;
    },
  })
  DATABASE_REPLICA_URLS: string[] = [];

  @ToDecimal()
  @IsNumber({ maxDecimalPlaces: 3 }, SECONDS)
  @IsPositive(SECONDS)
  @Max(999_999.999, SECONDS)
  DATABASE_REPLICA_MAX_LAG_SECONDS = 2;

  @ToInteger()
  @IsInt(WHOLE)
  @Min(0, WHOLE)
  @Max(LARGEST, WHOLE)
  DATABASE_WAIT_SECONDS = 30;

  /** Keys a client can send: the guard reads `Bearer <visible ASCII>`, so a key with anything else would never match. */
  @ToList()
  @Matches(VISIBLE_ASCII, {
    each: true,
    message: ({ value }: ValidationArguments) =>
      `API_KEYS: key ${firstFailing(value, (key) => VISIBLE_ASCII.test(key)).position} holds a space or a character other than visible ASCII, so no client could send it`,
  })
  API_KEYS: string[] = [];

  @ToInteger()
  @IsInt(POSITIVE)
  @Min(1, POSITIVE)
  @Max(LARGEST, POSITIVE)
  API_KEY_CACHE_SECONDS = 5;

  /** Also true or 1, false or 0. */
  @ToSwitch()
  @IsIn(['on', 'off'], mustBe('on or off'))
  RATE_LIMIT: 'on' | 'off' = 'on';

  /** Read only while RATE_LIMIT is on. */
  @ToInteger()
  @ValidateIf((env: EnvironmentVariables) => env.RATE_LIMIT === 'on')
  @IsInt(POSITIVE)
  @Min(1, POSITIVE)
  @Max(LARGEST, POSITIVE)
  RATE_LIMIT_PER_MINUTE = 1200;

  /** Read only while RATE_LIMIT is on. */
  @ToInteger()
  @ValidateIf((env: EnvironmentVariables) => env.RATE_LIMIT === 'on')
  @IsInt(POSITIVE)
  @Min(1, POSITIVE)
  @Max(LARGEST, POSITIVE)
  AUTH_FAILURES_PER_MINUTE = 20;

  /** Unset: rate-limit counters are kept, and the high-water marks read, per process. */
  @Trimmed()
  @IsOptional()
  @IsUrlWithScheme(['redis:', 'rediss:'], { message: 'REDIS_URL must be a redis:// or rediss:// URL' })
  REDIS_URL?: string;

  /** Proxies whose X-Forwarded-For is believed (Express's `trust proxy`). Empty: the client is the socket's peer. */
  @ToList()
  @Satisfies('isAddressOrCidr', isAddressOrCidr, {
    each: true,
    message: ({ value }: ValidationArguments) =>
      `TRUSTED_PROXIES must list IP addresses or CIDRs (such as 10.0.0.0/8), got "${firstFailing(value, isAddressOrCidr).item}"`,
  })
  TRUSTED_PROXIES: string[] = [];

  /** Empty: CORS off. */
  @ToList()
  @Satisfies('isOrigin', isOrigin, {
    each: true,
    message: ({ value }: ValidationArguments) =>
      `CORS_ORIGINS must list origins such as https://app.example or http://localhost:8080 (scheme, host and port only), got "${firstFailing(value, isOrigin).item}"`,
  })
  CORS_ORIGINS: string[] = [];

  /** Unset: the API's own relative path. */
  @Trimmed()
  @IsOptional()
  @IsHttpUrlOrPath(HTTP_URL_OR_PATH)
  PUBLIC_BASE_URL?: string;

  @Trimmed()
  @IsOptional()
  @IsHttpUrlOrPath(HTTP_URL_OR_PATH)
  STAGING_BASE_URL?: string;

  /** Unset: a secret kept in the database, so cursors hold on every instance and across restarts. */
  @Trimmed()
  @IsOptional()
  @IsString()
  CURSOR_SECRET?: string;

  @LowerCased()
  @IsIn(LOG_LEVELS, mustBe(`one of ${LOG_LEVELS.join(', ')}`))
  LOG_LEVEL: LogLevel = 'info';

  /** Unset: pretty when stdout is a terminal (a person reads it), json anywhere else (a collector parses it). */
  @LowerCased()
  @IsOptional()
  @IsIn(['json', 'pretty'], mustBe('json or pretty'))
  LOG_FORMAT?: 'json' | 'pretty';

  @ToInteger()
  @IsInt(POSITIVE)
  @Min(1, POSITIVE)
  @Max(LARGEST, POSITIVE)
  SHUTDOWN_TIMEOUT_SECONDS = 10;

  @ToInteger()
  @IsInt(WHOLE)
  @Min(0, WHOLE)
  @Max(LARGEST, WHOLE)
  SHUTDOWN_DELAY_SECONDS = 0;

  // OpenTelemetry's own variables, which its SDK reads (with the others of its specification): the
  // service checks these while tracing is on, so that a value the SDK would ignore stops the start.

  /** The collector; tracing is on when either endpoint is set, and the traces one wins. */
  @Trimmed()
  @ValidateIf(tracingIsOn)
  @IsOptional()
  @IsUrlWithScheme(['http:', 'https:'], otel('an http:// or https:// URL, such as http://collector:4318'))
  OTEL_EXPORTER_OTLP_ENDPOINT?: string;

  @Trimmed()
  @ValidateIf(tracingIsOn)
  @IsOptional()
  @IsUrlWithScheme(['http:', 'https:'], otel('an http:// or https:// URL, such as http://collector:4318'))
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string;

  @Trimmed()
  @ValidateIf(tracingIsOn)
  @IsOptional()
  @IsIn(OTLP_PROTOCOLS, otel(`one of ${OTLP_PROTOCOLS.join(', ')}`))
  OTEL_EXPORTER_OTLP_PROTOCOL?: string;

  @Trimmed()
  @ValidateIf(tracingIsOn)
  @IsOptional()
  @IsIn(OTLP_PROTOCOLS, otel(`one of ${OTLP_PROTOCOLS.join(', ')}`))
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?: string;

  @Trimmed()
  @ValidateIf(tracingIsOn)
  @IsOptional()
  @IsIn(SAMPLERS, otel(`one of ${SAMPLERS.join(', ')}`))
  OTEL_TRACES_SAMPLER?: string;

  /** The ratio of the traceidratio samplers. */
  @ToNumber()
  @ValidateIf(
    (env: EnvironmentVariables) => tracingIsOn(env) && env.OTEL_TRACES_SAMPLER?.endsWith('traceidratio') === true,
  )
  @IsOptional()
  @IsNumber({}, RATIO)
  @Min(0, RATIO)
  @Max(1, RATIO)
  OTEL_TRACES_SAMPLER_ARG?: number;

  /** true turns tracing off, whatever the endpoints say (the specification's switch); any other value does not. */
  @LowerCased()
  @IsOptional()
  @IsString()
  OTEL_SDK_DISABLED?: string;
}

/** Where traces go, or null when tracing is off: no endpoint, or OTEL_SDK_DISABLED=true. */
export function tracingEndpointOf(
  env: Pick<
    EnvironmentVariables,
    'OTEL_SDK_DISABLED' | 'OTEL_EXPORTER_OTLP_ENDPOINT' | 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'
  >,
): string | null {
  if (env.OTEL_SDK_DISABLED === 'true') return null;
  return env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT ?? null;
}

function tracingIsOn(env: EnvironmentVariables): boolean {
  return tracingEndpointOf(env) !== null;
}

function samplerOf(env: object): string {
  return env instanceof EnvironmentVariables ? (env.OTEL_TRACES_SAMPLER ?? '') : '';
}

/** OpenTelemetry's variables quote the value in parentheses: their rules end in lists and examples. */
function otel(rule: string): ValidationOptions {
  return {
    message: ({ property, value }: ValidationArguments) => `${property} must be ${rule} (got "${String(value)}")`,
  };
}
