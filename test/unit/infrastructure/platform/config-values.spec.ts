import { ConfigError, loadConfig, validateEnvironment } from '../../../../src/infrastructure/platform/config.js';
import { refusal } from '../../../support/config.js';

// Each variable at the edges of what it accepts; config.spec.ts covers the defaults and a full .env.
describe('loadConfig, value by value', () => {
  it('reads a value with spaces around it, and takes a blank one as unset', () => {
    expect(loadConfig({ PORT: ' 8080 ', HOST: ' ', DATA_DIR: ' /srv/pets ', CURSOR_SECRET: '  ' })).toMatchObject({
      port: 8080,
      host: '0.0.0.0',
      dataDir: '/srv/pets',
      cursorSecret: null,
    });
  });

  it('has defaults for the settings config.spec.ts does not list', () => {
    expect(loadConfig({})).toMatchObject({ apiKeyCacheSeconds: 5, redisUrl: null, cursorSecret: null });
  });

  it.each([
    ['0', 0],
    ['65535', 65535],
    ['00080', 80],
  ])('accepts PORT=%s', (value, port) => {
    expect(loadConfig({ PORT: value }).port).toBe(port);
  });

  it.each([['65536'], ['-1'], ['80a'], ['a80'], ['8 0'], ['1e3']])('refuses PORT=%s, quoting it', (value) => {
    expect(refusal({ PORT: value })).toBe(`PORT must be an integer from 0 to 65535, got "${value}"`);
  });

  it.each([['127.0.0.1'], ['::1'], ['db-1.example.com']])('accepts HOST=%s', (host) => {
    expect(loadConfig({ HOST: host }).host).toBe(host);
  });

  it.each([['pets host'], ['host_name'], ['-bad!'], ['x/y']])('refuses HOST=%s', (host) => {
    expect(refusal({ HOST: host })).toBe(`HOST must be an IP address or a host name, got "${host}"`);
  });

  it('accepts both PostgreSQL URL schemes, and names the scheme it refuses', () => {
    expect(loadConfig({ DATABASE_URL: 'postgres://h/db' }).databaseUrl).toBe('postgres://h/db');
    expect(loadConfig({ DATABASE_URL: 'postgresql://h/db' }).databaseUrl).toBe('postgresql://h/db');
    expect(refusal({ DATABASE_URL: 'mysql://h/db' })).toBe(
      'DATABASE_URL must start with postgres:// or postgresql://, got "mysql://"',
    );
    expect(refusal({ DATABASE_URL: 'nope' })).toBe(
      'DATABASE_URL is not a valid URL (expected postgres://user:password@host:port/database)',
    );
  });

  it('numbers the replica URL it refuses', () => {
    expect(refusal({ DATABASE_URL: 'postgres://h/db', DATABASE_REPLICA_URLS: 'postgres://r/db, nope' })).toBe(
      'DATABASE_REPLICA_URLS (URL 2) is not a valid URL (expected postgres://user:password@host:port/database)',
    );
    expect(refusal({ DATABASE_REPLICA_URLS: 'postgres://r/db' })).toBe(
      'DATABASE_REPLICA_URLS needs DATABASE_URL: the embedded database has no replicas',
    );
  });

  it.each([
    ['/v1/', '/v1'],
    ['/', '/'],
    ['/api//', '/api'],
    ['https://pets.example//', 'https://pets.example'],
    ['http://pets.example/v1', 'http://pets.example/v1'],
  ])('accepts PUBLIC_BASE_URL=%s as %s', (value, url) => {
    expect(loadConfig({ PUBLIC_BASE_URL: value, STAGING_BASE_URL: value })).toMatchObject({
      publicBaseUrl: url,
      stagingBaseUrl: url,
    });
  });

  it.each([['v1'], ['/v 1'], ['ftp://pets.example'], ['https//pets'], ['xhttps://pets.example']])(
    'refuses STAGING_BASE_URL=%s',
    (value) => {
      expect(refusal({ STAGING_BASE_URL: value })).toBe(
        `STAGING_BASE_URL must be an absolute http(s) URL or a path such as /v1, got "${value}"`,
      );
    },
  );

  it.each([
    ['on', true],
    ['TRUE', true],
    ['1', true],
    ['Off', false],
    ['false', false],
    ['0', false],
  ])('reads RATE_LIMIT=%s', (value, on) => {
    expect(loadConfig({ RATE_LIMIT: value }).rateLimit !== null).toBe(on);
  });

  it('quotes a RATE_LIMIT it cannot read', () => {
    expect(refusal({ RATE_LIMIT: 'Maybe' })).toBe('RATE_LIMIT must be on or off, got "maybe"');
  });

  it.each([['1'], ['999999999']])('accepts API_KEY_CACHE_SECONDS=%s', (value) => {
    expect(loadConfig({ API_KEY_CACHE_SECONDS: value }).apiKeyCacheSeconds).toBe(Number(value));
  });

  it.each([['0'], ['1000000000'], ['1.5'], ['x1'], ['1x']])('refuses AUTH_FAILURES_PER_MINUTE=%s', (value) => {
    expect(refusal({ AUTH_FAILURES_PER_MINUTE: value })).toBe(
      `AUTH_FAILURES_PER_MINUTE must be a positive integer, got "${value}"`,
    );
  });

  it.each([['0'], ['999999999']])('accepts DATABASE_WAIT_SECONDS=%s', (value) => {
    expect(loadConfig({ DATABASE_WAIT_SECONDS: value }).databaseWaitSeconds).toBe(Number(value));
  });

  it.each([['-1'], ['1.5'], ['1000000000'], ['x1'], ['1x']])('refuses SHUTDOWN_DELAY_SECONDS=%s', (value) => {
    expect(refusal({ SHUTDOWN_DELAY_SECONDS: value })).toBe(
      `SHUTDOWN_DELAY_SECONDS must be a whole number, got "${value}"`,
    );
  });

  it.each([
    ['0.001', 0.001],
    ['999999.999', 999999.999],
    ['3', 3],
  ])('accepts DATABASE_REPLICA_MAX_LAG_SECONDS=%s', (value, seconds) => {
    expect(loadConfig({ DATABASE_REPLICA_MAX_LAG_SECONDS: value }).databaseReplicaMaxLagSeconds).toBe(seconds);
  });

  // A number is quoted as it was read: 0.000 as 0.
  it.each([
    ['0.000', '0'],
    ['1000000', '1000000'],
    ['0.0001', '0.0001'],
    ['.5', '.5'],
    ['x1', 'x1'],
    ['1x', '1x'],
  ])('refuses DATABASE_REPLICA_MAX_LAG_SECONDS=%s, quoting %s', (value, quoted) => {
    expect(refusal({ DATABASE_REPLICA_MAX_LAG_SECONDS: value })).toBe(
      `DATABASE_REPLICA_MAX_LAG_SECONDS must be a number of seconds above 0, got "${quoted}"`,
    );
  });

  it('takes API keys of visible ASCII, and names the first it refuses', () => {
    expect(loadConfig({ API_KEYS: '!~,abc' }).apiKeys).toEqual(['!~', 'abc']);
    expect(refusal({ API_KEYS: 'ok,tab\tkey,also bad' })).toBe(
      'API_KEYS: key 2 holds a space or a character other than visible ASCII, so no client could send it',
    );
  });

  it.each([['10.0.0.0/0'], ['10.0.0.0/32'], ['::/128'], ['2001:db8::/32']])('accepts TRUSTED_PROXIES=%s', (value) => {
    expect(loadConfig({ TRUSTED_PROXIES: value }).trustedProxies).toEqual([value]);
  });

  it.each([['10.0.0.0/'], ['10.0.0.0/1000'], ['10.0.0.0/x'], ['::/129'], ['/8']])(
    'refuses TRUSTED_PROXIES=%s',
    (value) => {
      expect(refusal({ TRUSTED_PROXIES: value })).toBe(
        `TRUSTED_PROXIES must list IP addresses or CIDRs (such as 10.0.0.0/8), got "${value}"`,
      );
    },
  );

  it('accepts redis:// and rediss:// and nothing else', () => {
    expect(loadConfig({ REDIS_URL: 'rediss://cache:6380' }).redisUrl).toBe('rediss://cache:6380');
    for (const url of ['http://cache', 'xredis://cache', 'redis', 'redisx://cache'])
      expect(refusal({ REDIS_URL: url })).toBe('REDIS_URL must be a redis:// or rediss:// URL');
  });

  it('reads LOG_LEVEL and LOG_FORMAT in any case, and lists what it accepts', () => {
    expect(loadConfig({ LOG_LEVEL: 'SILENT', LOG_FORMAT: 'JSON' }).log).toEqual({ level: 'silent', pretty: false });
    expect(loadConfig({ LOG_FORMAT: 'Pretty' }).log.pretty).toBe(true);
    expect(refusal({ LOG_LEVEL: 'Loud' })).toBe(
      'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"',
    );
    expect(refusal({ LOG_FORMAT: 'XML' })).toMatch(/^LOG_FORMAT must be json or pretty, got "xml"$/i);
  });
});

describe('the log format a refused configuration is told in', () => {
  it.each([
    [{}, true, true],
    [{}, false, false],
    [{ LOG_FORMAT: ' Pretty ' }, false, true],
    [{ LOG_FORMAT: 'json' }, true, false],
    [{ LOG_FORMAT: 'xml' }, true, false],
  ])('%j, stdout a terminal: %s, pretty: %s', (env, terminal, pretty) => {
    let refusal: unknown = null;
    try {
      validateEnvironment({ ...env, PORT: 'eighty' }, terminal);
    } catch (error) {
      refusal = error;
    }

    expect(refusal).toBeInstanceOf(ConfigError);
    expect(refusal).toMatchObject({ pretty });
  });
});
