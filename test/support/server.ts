import type { NestExpressApplication } from '@nestjs/platform-express';
import type { DestinationStream } from 'pino';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../../src/infrastructure/database.js';
import { createApp } from '../../src/app.js';
import { findFreePort } from '../../src/infrastructure/embedded-postgres.js';
import { openTestDatabase, type TestDatabase } from './database.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';
import type { RateLimits } from '../../src/application/rate-limits.js';
import { NoRateLimits } from '../../src/infrastructure/rate-limits.js';

export const TEST_API_KEY = 'test-key-0123456789abcdef0123456789';

export type TestServer = { url: string; app: NestExpressApplication; close(): Promise<void> };

/** createApp() — the same stack main.ts runs — listening on a free port. */
export async function startServer(
  dataSource: DataSource,
  options: {
    rateLimits?: RateLimits;
    apiKeyCacheSeconds?: number;
    servers?: { production: string; staging: string };
    port?: number;
    log?: DestinationStream;
  } = {},
): Promise<TestServer> {
  const app = await createApp({
    dataSource,
    environmentKeys: [TEST_API_KEY, 'second-test-key-abcdefghijklmnop'],
    apiKeyCache: { seconds: options.apiKeyCacheSeconds ?? 5, maxEntries: 1000 },
    rateLimits: options.rateLimits ?? new NoRateLimits(),
    cursorSecret: 'test-cursor-secret',
    servers: options.servers ?? { production: 'https://petstore.example.com/v1', staging: 'https://staging.petstore.example.com/v1' },
    log: options.log ? { level: 'trace', destination: options.log } : { level: 'silent' },
  });
  await app.listen(options.port ?? 0, '127.0.0.1');
  const address: unknown = app.getHttpServer().address();
  if (typeof address !== 'object' || address === null || !('port' in address)) throw new Error('the server is not listening on TCP');
  return { url: `http://127.0.0.1:${address.port}`, app, close: () => app.close() };
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
export function useService(options: Parameters<typeof startServer>[1] & { throughProxy?: boolean } = {}): ServiceUnderTest {
  const service = new ServiceUnderTest();
  let serviceDataSource: DataSource | null = null;
  beforeAll(async () => {
    service.database = await openTestDatabase();
    serviceDataSource = service.database.dataSource;
    if (options.throughProxy) {
      service.proxy = await startTcpProxy(service.database.url);
      serviceDataSource = new DataSource(dataSourceOptions(service.proxy.url, service.database.schema));
      await serviceDataSource.initialize();
    }
    service.server = await startServer(serviceDataSource, options);
  });
  afterAll(async () => {
    await service.server?.close();
    if (options.throughProxy) {
      await serviceDataSource?.destroy();
      await service.proxy?.close();
    }
    await service.database?.close();
  });
  beforeEach(async () => {
    await service.database.reset();
  });
  return service;
}
