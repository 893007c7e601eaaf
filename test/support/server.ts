import type { NestExpressApplication } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import { PARAMS_PROVIDER_TOKEN } from 'nestjs-pino';
import type { DestinationStream } from 'pino';
import { APP_OPTIONS, configureApp, createExpressAdapter } from '../../src/app.js';
import { AppModule } from '../../src/app.module.js';
import { loadConfig, petstoreConfig } from '../../src/infrastructure/platform/config.js';
import { DatabaseServer } from '../../src/infrastructure/platform/database/database-server.js';
import { findFreePort } from './free-port.js';
import { NoRateLimits } from '../../src/infrastructure/platform/rate-limits/flexible-rate-limits.js';
import { RateLimits } from '../../src/application/platform/rate-limits.js';
import { loggerParams } from '../../src/interface/http/platform/logging.js';
import { openTestDatabase, type TestDatabase } from './database.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';

export const TEST_API_KEY = 'test-key-0123456789abcdef0123456789';

export type TestServer = { url: string; app: NestExpressApplication; close(): Promise<void> };

export type ServerOptions = {
  /** 'as configured': AccessModule's own, from the configuration (in Redis with `redisUrl`); unset: none. */
  rateLimits?: RateLimits | 'as configured';
  apiKeyCacheSeconds?: number;
  servers?: { production: string; staging: string };
  port?: number;
  log?: DestinationStream;
  /** null: no CURSOR_SECRET, as a deployment that leaves it unset. */
  cursorSecret?: string | null;
  /** TRUSTED_PROXIES, as an operator writes it. */
  trustedProxies?: string;
  /** CORS_ORIGINS, as an operator writes it. */
  corsOrigins?: string;
  /** REDIS_URL: the instances share their high-water marks' readings there (and the rate limits, 'as configured'). */
  redisUrl?: string;
};

/**
 * The service's own AppModule and HTTP stack (configureApp, as main.ts runs it) listening on a free
 * port, with the test's configuration and database put in place through Nest's testing module.
 */
export async function startServer(
  database: { url: string; schema?: string },
  options: ServerOptions = {},
): Promise<TestServer> {
  const servers = options.servers ?? {
    production: 'https://petstore.example.com/v1',
    staging: 'https://staging.petstore.example.com/v1',
  };
  const config = loadConfig({
    API_KEYS: `${TEST_API_KEY},second-test-key-abcdefghijklmnop`,
    API_KEY_CACHE_SECONDS: String(options.apiKeyCacheSeconds ?? 5),
    CURSOR_SECRET: options.cursorSecret === undefined ? 'test-cursor-secret' : (options.cursorSecret ?? ''),
    PUBLIC_BASE_URL: servers.production,
    STAGING_BASE_URL: servers.staging,
    LOG_LEVEL: options.log ? 'trace' : 'silent',
    TRUSTED_PROXIES: options.trustedProxies ?? '',
    CORS_ORIGINS: options.corsOrigins ?? '',
    ...(options.redisUrl === undefined ? {} : { REDIS_URL: options.redisUrl }),
  });
  const builder = Test.createTestingModule({ imports: [AppModule] })
    .overrideProvider(petstoreConfig.KEY)
    .useValue(config)
    .overrideProvider(DatabaseServer)
    .useValue(new DatabaseServer(database.url, database.schema))
    .overrideProvider(PARAMS_PROVIDER_TOKEN)
    .useValue(loggerParams(config.log, options.log));
  if (options.rateLimits !== 'as configured')
    builder.overrideProvider(RateLimits).useValue(options.rateLimits ?? new NoRateLimits());
  const moduleRef = await builder.compile();
  const app = await configureApp(
    moduleRef.createNestApplication<NestExpressApplication>(createExpressAdapter(), APP_OPTIONS),
  );
  await app.listen(options.port ?? 0, '127.0.0.1');
  const address: unknown = app.getHttpServer().address();
  if (typeof address !== 'object' || address === null || !('port' in address))
    throw new Error('the server is not listening on TCP');
  return { url: `http://127.0.0.1:${String(address.port)}`, app, close: () => app.close() };
}

export const authorized = { Authorization: `Bearer ${TEST_API_KEY}` };
export const json = { ...authorized, 'Content-Type': 'application/json' };

/** A port that was free a moment ago, for a server whose document must name its own address. */
export const freePort = findFreePort;

/** What useService() gives a test file; filled in before its first test. */
export class ServiceUnderTest {
  database!: TestDatabase;
  server!: TestServer;
  /** With `throughProxy`: cut() takes the database away from the service, restore() brings it back. */
  proxy!: TcpProxy;
}

/**
 * For one test file: a fresh database and the service on it, started before the first test and
 * closed after the last; the tables are emptied before each test. `throughProxy` puts a TCP proxy
 * the test controls between the service and PostgreSQL, so the database can "go away".
 */
export function useService(options: ServerOptions & { throughProxy?: boolean } = {}): ServiceUnderTest {
  const service = new ServiceUnderTest();
  beforeAll(async () => {
    service.database = await openTestDatabase();
    let url = service.database.url;
    if (options.throughProxy) {
      service.proxy = await startTcpProxy(service.database.url);
      url = service.proxy.url;
    }
    service.server = await startServer({ url, schema: service.database.schema }, options);
  });
  afterAll(async () => {
    await service.server?.close();
    if (options.throughProxy) await service.proxy?.close();
    await service.database?.close();
  });
  beforeEach(async () => {
    await service.database.reset();
  });
  return service;
}

/**
 * For a test file that starts several servers on one database: the database opens before the
 * file's tests, and every server `start()` made closes with it after them.
 */
export function serversOnOneDatabase(): {
  database: () => TestDatabase;
  start: (options?: ServerOptions) => Promise<TestServer>;
} {
  let database: TestDatabase | undefined;
  const servers: TestServer[] = [];
  beforeAll(async () => {
    database = await openTestDatabase();
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.close()));
    await database?.close();
  });
  const opened = (): TestDatabase => {
    if (database === undefined) throw new Error('serversOnOneDatabase(): the database opens in beforeAll');
    return database;
  };
  return {
    database: opened,
    start: async (options) => {
      const server = await startServer(opened(), options);
      servers.push(server);
      return server;
    },
  };
}
