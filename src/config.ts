import { isIP } from 'node:net';

export type Config = {
  port: number;
  host: string;
  /** null: start the embedded PostgreSQL kept in `dataDir`. */
  databaseUrl: string | null;
  dataDir: string;
  apiKeys: string[];
  publicBaseUrl: string;
  stagingBaseUrl: string;
  /** Signs paging cursors; null: a random secret per process (cursors then do not survive a restart). */
  cursorSecret: string | null;
};

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Reads and checks the environment once. Throws ConfigError naming the variable at fault. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = readPort(env.PORT);
  const host = readHost(env.HOST);
  const localBaseUrl = `http://localhost:${port}/v1`;
  return {
    port,
    host,
    databaseUrl: readDatabaseUrl(env.DATABASE_URL),
    dataDir: nonEmpty(env.DATA_DIR) ?? './data',
    apiKeys: (env.API_KEYS ?? '').split(',').map((key) => key.trim()).filter((key) => key.length > 0),
    publicBaseUrl: readUrl('PUBLIC_BASE_URL', env.PUBLIC_BASE_URL) ?? localBaseUrl,
    stagingBaseUrl: readUrl('STAGING_BASE_URL', env.STAGING_BASE_URL) ?? localBaseUrl,
    cursorSecret: nonEmpty(env.CURSOR_SECRET),
  };
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

function readDatabaseUrl(value: string | undefined): string | null {
  const text = nonEmpty(value);
  if (text === null) return null;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    // The URL may hold a password: never echo it.
    throw new ConfigError('DATABASE_URL is not a valid URL (expected postgres://user:password@host:port/database)');
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new ConfigError(`DATABASE_URL must start with postgres:// or postgresql://, got "${url.protocol}//"`);
  }
  return text;
}

function readUrl(name: string, value: string | undefined): string | null {
  const text = nonEmpty(value);
  if (text === null) return null;
  if (!URL.canParse(text) || !/^https?:$/.test(new URL(text).protocol)) {
    throw new ConfigError(`${name} must be an absolute http(s) URL, got "${text}"`);
  }
  return text.replace(/\/+$/, '');
}
