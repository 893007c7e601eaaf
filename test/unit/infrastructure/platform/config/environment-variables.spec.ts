import { readFileSync } from 'node:fs';
import { getMetadataStorage } from 'class-validator';
import { EnvironmentVariables } from '../../../../../src/infrastructure/platform/config/environment-variables.js';
import { ConfigError, loadConfig, validateEnvironment } from '../../../../../src/infrastructure/platform/config.js';
import { refusal } from '../../../../support/config.js';

// The rules of EnvironmentVariables, variable by variable, and the docs that list them.

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

const ENDPOINT = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };

describe('loadConfig: tracingEndpoint', () => {
  it('is off without an OTLP endpoint, whatever other OTEL_* say', () => {
    expect(loadConfig({}).tracingEndpoint).toBeNull();
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ', OTEL_SERVICE_NAME: 'petstore' }).tracingEndpoint).toBeNull();
  });

  it('takes the traces endpoint over the general one', () => {
    expect(loadConfig(ENDPOINT).tracingEndpoint).toBe('http://collector:4318');
    expect(
      loadConfig({ ...ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces:4318/v1/traces' }).tracingEndpoint,
    ).toBe('http://traces:4318/v1/traces');
  });

  it('is off when OTEL_SDK_DISABLED is true, as the specification says', () => {
    expect(loadConfig({ ...ENDPOINT, OTEL_SDK_DISABLED: 'TRUE' }).tracingEndpoint).toBeNull();
  });

  it('accepts the standard settings', () => {
    expect(
      loadConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'https://collector.example:4318',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0.25',
      }).tracingEndpoint,
    ).toBe('https://collector.example:4318');
  });

  it.each([
    'always_on',
    'always_off',
    'traceidratio',
    'parentbased_always_on',
    'parentbased_always_off',
    'parentbased_traceidratio',
  ])('accepts the sampler %s', (sampler) => {
    expect(loadConfig({ ...ENDPOINT, OTEL_TRACES_SAMPLER: sampler }).tracingEndpoint).toBe('http://collector:4318');
  });

  it('names the sampler a wrong ratio was given for', () => {
    expect(refusal({ ...ENDPOINT, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '2' })).toBe(
      'OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1 for traceidratio (got "2")',
    );
  });

  it.each([
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, /^OTEL_EXPORTER_OTLP_ENDPOINT must be an http/],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'not a url' }, /^OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be an http/],
    [
      { ...ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'http' },
      /^OTEL_EXPORTER_OTLP_PROTOCOL must be one of http\/protobuf, http\/json, grpc/,
    ],
    [{ ...ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'json' }, /^OTEL_EXPORTER_OTLP_TRACES_PROTOCOL must be one of/],
    [
      { ...ENDPOINT, OTEL_TRACES_SAMPLER: 'sometimes' },
      /^OTEL_TRACES_SAMPLER must be one of always_on, .*\(got "sometimes"\)/,
    ],
    [
      { ...ENDPOINT, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '1.5' },
      /^OTEL_TRACES_SAMPLER_ARG must be a ratio/,
    ],
    [
      { ...ENDPOINT, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: 'half' },
      /^OTEL_TRACES_SAMPLER_ARG /,
    ],
  ])('refuses to start, naming the variable at fault, in %j', (env, message) => {
    expect(refusal(env)).toMatch(message);
  });

  it('leaves the OTEL_* settings alone while tracing is off', () => {
    expect(loadConfig({ OTEL_TRACES_SAMPLER: 'sometimes' }).tracingEndpoint).toBeNull();
  });
});

describe('CORS_ORIGINS', () => {
  it('is off when unset or blank', () => {
    expect(loadConfig({}).corsOrigins).toEqual([]);
    expect(loadConfig({ CORS_ORIGINS: ' ' }).corsOrigins).toEqual([]);
  });

  it('lists exact origins, comma-separated, spaces around them ignored', () => {
    expect(
      loadConfig({ CORS_ORIGINS: 'https://shelter.example, http://localhost:8080,http://[::1]:3001' }).corsOrigins,
    ).toEqual(['https://shelter.example', 'http://localhost:8080', 'http://[::1]:3001']);
  });

  it.each([
    ['a path or trailing slash', 'https://shelter.example/'],
    ['a path', 'https://shelter.example/app'],
    ['no scheme', 'shelter.example'],
    ['another scheme', 'ftp://shelter.example'],
    ['a wildcard', '*'],
    ['the default port spelt out (browsers never send it)', 'https://shelter.example:443'],
    ['upper case (browsers send the host in lower case)', 'https://Shelter.example'],
    ['credentials', 'https://user@shelter.example'],
  ])('refuses %s with one line naming the variable and the value', (_, value) => {
    const read = () => loadConfig({ CORS_ORIGINS: `https://ok.example,${value}` });

    expect(read).toThrow(ConfigError);
    expect(read).toThrow(
      `CORS_ORIGINS must list origins such as https://app.example or http://localhost:8080 (scheme, host and port only), got "${value}"`,
    );
  });
});

// The variables and defaults operators read (README.md's "Configuration" table, .env.example) are
// the ones EnvironmentVariables declares.

/** Every variable the class declares, with its default as text; undefined: none (unset, or an empty list). */
function declared(): Map<string, string | undefined> {
  const defaults = new Map(Object.entries(new EnvironmentVariables()));
  const names = getMetadataStorage()
    .getTargetValidationMetadatas(EnvironmentVariables, '', true, false)
    .map((rule) => rule.propertyName);
  return new Map(names.map((name) => [name, shown(defaults.get(name))]));
}

/** A default as the docs write it; the lists' default, empty, is none. */
function shown(value: unknown): string | undefined {
  return typeof value === 'string' || typeof value === 'number' ? String(value) : undefined;
}

/**
 * The README's table: the variables each row names in its first cell, and the defaults its last
 * cell gives, one per variable in backticks; a cell that starts "unset" or "none" gives none.
 */
function readmeTable(): Map<string, string | undefined> {
  const section = readFileSync('README.md', 'utf8').split('\n## Configuration\n')[1]?.split('\n## ')[0] ?? '';
  const table = new Map<string, string | undefined>();
  for (const row of section.split('\n').filter((line) => line.startsWith('| `'))) {
    const cells = row.split('|').map((cell) => cell.trim());
    const names = backticked(cells[1] ?? '');
    const defaultCell = cells[3] ?? '';
    const defaults = /^(unset|none)\b/.test(defaultCell) ? [] : backticked(defaultCell);
    if (defaults.length > 0 && defaults.length !== names.length)
      throw new Error(`README.md: the row of ${names.join(', ')} gives ${defaults.length} defaults`);
    names.forEach((name, i) => table.set(name, defaults[i]));
  }
  return table;
}

function backticked(cell: string): string[] {
  return [...cell.matchAll(/`([^`]+)`/g)].map((match) => match[1] ?? '');
}

/** .env.example's variables, set (`NAME=value`) or shown commented out (`# NAME=example`). */
function envExample(): { names: string[]; set: Map<string, string> } {
  const lines = readFileSync('.env.example', 'utf8').split('\n');
  const names = lines.flatMap((line) => /^#? ?([A-Z][A-Z0-9_]*)=/.exec(line)?.[1] ?? []);
  const set = new Map(
    lines.flatMap((line) => {
      const match = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
      return match ? [[match[1] ?? '', match[2] ?? ''] as const] : [];
    }),
  );
  return { names, set };
}

describe('the configuration as documented', () => {
  it("README.md's table names exactly the variables EnvironmentVariables declares", () => {
    expect([...readmeTable().keys()].sort()).toEqual([...declared().keys()].sort());
  });

  it("README.md's table gives each variable the class's default", () => {
    const table = readmeTable();

    for (const [name, value] of declared())
      expect({ name, default: table.get(name) }).toEqual({ name, default: value });
  });

  it('.env.example lists every variable, and others only of OpenTelemetry (its SDK reads them itself)', () => {
    const { names } = envExample();

    expect([...declared().keys()].filter((name) => !names.includes(name))).toEqual([]);
    expect(names.filter((name) => !declared().has(name) && !name.startsWith('OTEL_'))).toEqual([]);
  });

  it('.env.example sets a variable only to its default', () => {
    const variables = declared();

    for (const [name, value] of envExample().set) expect({ name, value }).toEqual({ name, value: variables.get(name) });
  });
});
