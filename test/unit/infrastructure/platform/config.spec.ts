import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { envFileSettings, loadConfig, validateEnvironment } from '../../../../src/infrastructure/platform/config.js';
import { refusal } from '../../../support/config.js';
import { tempDir } from '../../../support/temp-dirs.js';

describe('loadConfig', () => {
  it('has defaults that start the service on the embedded database', () => {
    expect(loadConfig({})).toMatchObject({
      port: 3000,
      host: '0.0.0.0',
      databaseUrl: null,
      dataDir: './data',
      apiKeys: [],
      publicBaseUrl: null,
      stagingBaseUrl: null,
      databaseWaitSeconds: 30,
      shutdownDelaySeconds: 0,
      rateLimit: { perKeyPerMinute: 1200, failedAuthenticationsPerMinute: 20 },
      log: { level: 'info', pretty: false },
      shutdownTimeoutSeconds: 10,
      trustedProxies: [],
      databaseReplicaUrls: [],
      databaseReplicaMaxLagSeconds: 2,
      corsOrigins: [],
      tracingEndpoint: null,
    });
  });

  it('reads every variable of .env.example', () => {
    const config = loadConfig({
      PORT: '8080',
      HOST: '127.0.0.1',
      DATABASE_URL: 'postgresql://u:p@db:5432/pets',
      DATA_DIR: '/var/lib/petstore',
      API_KEYS: ' a , b,,',
      API_KEY_CACHE_SECONDS: '2',
      RATE_LIMIT: 'on',
      RATE_LIMIT_PER_MINUTE: '60',
      AUTH_FAILURES_PER_MINUTE: '5',
      REDIS_URL: 'redis://cache:6379',
      PUBLIC_BASE_URL: 'https://pets.example/v1/',
      STAGING_BASE_URL: 'https://staging.pets.example/v1',
      CURSOR_SECRET: 'cursor-secret',
      LOG_LEVEL: 'DEBUG',
      LOG_FORMAT: 'pretty',
      SHUTDOWN_TIMEOUT_SECONDS: '30',
      DATABASE_WAIT_SECONDS: '0',
      SHUTDOWN_DELAY_SECONDS: '5',
      TRUSTED_PROXIES: ' 127.0.0.1, 10.0.0.0/8 ,::1,fd00::/8',
      DATABASE_REPLICA_URLS: 'postgres://u:p@replica1:5432/pets, postgresql://u:p@replica2/pets,',
      DATABASE_REPLICA_MAX_LAG_SECONDS: '0.5',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.1',
    });

    expect(config).toEqual({
      port: 8080,
      host: '127.0.0.1',
      databaseUrl: 'postgresql://u:p@db:5432/pets',
      dataDir: '/var/lib/petstore',
      apiKeys: ['a', 'b'],
      apiKeyCacheSeconds: 2,
      rateLimit: { perKeyPerMinute: 60, failedAuthenticationsPerMinute: 5 },
      redisUrl: 'redis://cache:6379',
      publicBaseUrl: 'https://pets.example/v1',
      stagingBaseUrl: 'https://staging.pets.example/v1',
      cursorSecret: 'cursor-secret',
      log: { level: 'debug', pretty: true },
      shutdownTimeoutSeconds: 30,
      databaseWaitSeconds: 0,
      shutdownDelaySeconds: 5,
      trustedProxies: ['127.0.0.1', '10.0.0.0/8', '::1', 'fd00::/8'],
      databaseReplicaUrls: ['postgres://u:p@replica1:5432/pets', 'postgresql://u:p@replica2/pets'],
      databaseReplicaMaxLagSeconds: 0.5,
      corsOrigins: [],
      tracingEndpoint: 'http://collector:4318',
    });
    expect(loadConfig({ RATE_LIMIT: 'off' }).rateLimit).toBeNull();
  });

  it.each([
    [{ PORT: 'abc' }, /^PORT /],
    [{ PORT: '70000' }, /^PORT /],
    [{ DATABASE_URL: 'not a url' }, /^DATABASE_URL /],
    [{ DATABASE_URL: 'mysql://u@h/db' }, /^DATABASE_URL /],
    [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL /],
    [{ API_KEYS: 'good,has space' }, /^API_KEYS: key 2 /],
    [{ API_KEYS: 'clé' }, /^API_KEYS: key 1 /],
    [{ LOG_FORMAT: 'xml' }, /^LOG_FORMAT /],
    [{ RATE_LIMIT: 'maybe' }, /^RATE_LIMIT /],
    [{ RATE_LIMIT_PER_MINUTE: '0' }, /^RATE_LIMIT_PER_MINUTE /],
    [{ REDIS_URL: 'http://x' }, /^REDIS_URL /],
    [{ PUBLIC_BASE_URL: 'ftp://x' }, /^PUBLIC_BASE_URL /],
    [{ SHUTDOWN_TIMEOUT_SECONDS: '-1' }, /^SHUTDOWN_TIMEOUT_SECONDS /],
    [{ TRUSTED_PROXIES: 'haproxy.local' }, /^TRUSTED_PROXIES .*"haproxy.local"$/],
    [{ TRUSTED_PROXIES: '10.0.0.0/33' }, /^TRUSTED_PROXIES /],
    [{ TRUSTED_PROXIES: '127.0.0.1,10.0.0.1/8/8' }, /^TRUSTED_PROXIES /],
    [{ TRUSTED_PROXIES: '::1/129' }, /^TRUSTED_PROXIES /],
    [
      { DATABASE_URL: 'postgres://h/db', DATABASE_REPLICA_URLS: 'postgres://r1/db,mysql://r2/db' },
      /^DATABASE_REPLICA_URLS \(URL 2\) must start/,
    ],
    [{ DATABASE_REPLICA_URLS: 'postgres://r1/db' }, /^DATABASE_REPLICA_URLS needs DATABASE_URL/],
    [{ DATABASE_REPLICA_MAX_LAG_SECONDS: '0' }, /^DATABASE_REPLICA_MAX_LAG_SECONDS /],
    [{ DATABASE_REPLICA_MAX_LAG_SECONDS: '1s' }, /^DATABASE_REPLICA_MAX_LAG_SECONDS /],
  ])('refuses %j with a message naming the variable', (env, message) => {
    expect(refusal(env)).toMatch(message);
  });

  it('never echoes a DATABASE_URL, which may hold a password', () => {
    expect(refusal({ DATABASE_URL: 'postgres://user:s3cret@[bad' })).not.toContain('s3cret');
    expect(
      refusal({ DATABASE_URL: 'postgres://h/db', DATABASE_REPLICA_URLS: 'postgres://user:s3cret@[bad' }),
    ).not.toContain('s3cret');
  });

  it('names every variable that is wrong in one line, in the order EnvironmentVariables declares them', () => {
    expect(refusal({ LOG_LEVEL: 'loud', PORT: 'x', DATABASE_URL: 'postgres://user:s3cret@[bad' })).toBe(
      'PORT must be an integer from 0 to 65535, got "x"; ' +
        'DATABASE_URL is not a valid URL (expected postgres://user:password@host:port/database); ' +
        'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"',
    );
  });

  it('reads the rate-limit settings only while RATE_LIMIT is on', () => {
    expect(loadConfig({ RATE_LIMIT: 'off', RATE_LIMIT_PER_MINUTE: '0' }).rateLimit).toBeNull();
    expect(refusal({ RATE_LIMIT: 'on', RATE_LIMIT_PER_MINUTE: '0' })).toBe(
      'RATE_LIMIT_PER_MINUTE must be a positive integer, got "0"',
    );
  });
});

describe("validateEnvironment, ConfigModule's validate", () => {
  it('gives back the variables read, and the defaults of those unset or blank', () => {
    expect(validateEnvironment({ PORT: '8080', HOST: ' ', API_KEYS: 'a, b' })).toMatchObject({
      PORT: 8080,
      HOST: '0.0.0.0',
      API_KEYS: ['a', 'b'],
      RATE_LIMIT: 'on',
      LOG_LEVEL: 'info',
      DATABASE_REPLICA_MAX_LAG_SECONDS: 2,
    });
  });
});

describe('envFileSettings', () => {
  const file = path.join(tempDir('petstore-env-'), '.env');
  writeFileSync(
    file,
    ['PORT=4000', 'OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318', "LOG_LEVEL='warn'", ''].join('\n'),
  );

  it('takes every setting of the file', () => {
    expect(envFileSettings(file, {})).toEqual({
      PORT: '4000',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      LOG_LEVEL: 'warn',
    });
  });

  it('leaves what the environment sets: real environment variables win', () => {
    expect(envFileSettings(file, { LOG_LEVEL: 'debug', PORT: '' })).toEqual({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
    });
  });

  it('is empty without a file', () => {
    expect(envFileSettings(path.join(path.dirname(file), 'none'), {})).toEqual({});
  });
});
