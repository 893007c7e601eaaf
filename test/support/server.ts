import { createServer } from 'node:net';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { DestinationStream } from 'pino';
import type { DataSource } from 'typeorm';
import { createApp } from '../../src/app.js';
import { openTestDatabase, type TestDatabase } from './database.js';
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
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

/** What useService() gives a test file; filled in before its first test. */
export class ServiceUnderTest {
  database!: TestDatabase;
  server!: TestServer;
}

/**
 * For one test file: a fresh database and the service on it, started before the first test and
 * closed after the last; the tables are emptied before each test.
 */
export function useService(options: Parameters<typeof startServer>[1] = {}): ServiceUnderTest {
  const service = new ServiceUnderTest();
  beforeAll(async () => {
    service.database = await openTestDatabase();
    service.server = await startServer(service.database.dataSource, options);
  });
  afterAll(async () => {
    await service.server?.close();
    await service.database?.close();
  });
  beforeEach(async () => {
    await service.database.reset();
  });
  return service;
}
