import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { Browser } from 'playwright-core';
import { FlexibleRateLimits } from '../../src/infrastructure/platform/rate-limits/flexible-rate-limits.js';
import { launchChromium } from '../support/browser.js';
import { openTestDatabase, type TestDatabase } from '../support/database.js';
import { json, startServer, TEST_API_KEY, type TestServer } from '../support/server.js';

// The client package's build (packages/client/dist, ESM: `npm run test:browser` builds it) loaded
// by a page on an origin listed in CORS_ORIGINS, with openapi-fetch mapped by an import map, as a
// page without a bundler would. The page's script runs the calls; the test reads what it saw.

const PAGE = `<!doctype html>
<title>Shelter</title>
<script type="importmap">
  { "imports": { "@petstore/client": "/client/index.js", "openapi-fetch": "/openapi-fetch.js" } }
</script>
<script type="module">
  import { PetstoreClient, PetstoreError } from '@petstore/client';
  const query = new URLSearchParams(location.search);
  const warnings = [];
  const petstore = new PetstoreClient({
    baseUrl: query.get('api') + '/v1',
    apiKey: query.get('key'),
    pageSize: 1,
    onDeprecation: (notice) => warnings.push(notice),
  });
  try {
    const created = await petstore.pets.create({ name: 'Browser Rex', categoryId: 2 });
    const names = [];
    for await (const pet of petstore.pets.list()) names.push(pet.name);
    const fetched = await petstore.pets.get(created.id);
    const error = await petstore.pets.create({ name: ' ', categoryId: 1 }).catch((e) => e);
    window.outcome = {
      created,
      names,
      fetched: fetched.name,
      warnings,
      error: { typed: error instanceof PetstoreError, code: error.code, status: error.status, requestId: error.requestId },
    };
  } catch (error) {
    window.outcome = { failed: String(error) };
  }
</script>`;

const FILES: Record<string, string> = {
  '/openapi-fetch.js': 'node_modules/openapi-fetch/dist/index.mjs',
};

let database: TestDatabase;
let api: TestServer;
let pages: Server;
let pagePort: number;
let browser: Browser;

beforeAll(async () => {
  database = await openTestDatabase();
  pages = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    const file = FILES[path] ?? (/^\/client\/[\w.-]+\.js$/.test(path) ? `packages/client/dist/${path.slice(8)}` : null);
    if (file === null) {
      response.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
      response.end(PAGE);
      return;
    }
    readFile(file).then(
      (body) => response.writeHead(200, { 'Content-Type': 'text/javascript' }).end(body),
      () => response.writeHead(404).end(),
    );
  });
  await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
  const address = pages.address();
  if (typeof address !== 'object' || address === null) throw new Error('the page server is not listening on TCP');
  pagePort = address.port;
  api = await startServer(database, {
    corsOrigins: `http://localhost:${pagePort}`,
    rateLimits: new FlexibleRateLimits({ perKeyPerMinute: 1000, failedAuthenticationsPerMinute: 100 }, null),
  });
  await fetch(`${api.url}/v1/pets`, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ name: 'Already Here', categoryId: 1 }),
  });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await api?.close();
  await new Promise((resolve) => pages?.close(resolve));
  await database?.close();
});

describe('the client package in a browser, on a listed origin', () => {
  it('creates, lists every pet across pages, reads the deprecation headers and the typed error', async () => {
    await readFile('packages/client/dist/index.js').catch(() => {
      throw new Error('packages/client/dist is missing: run `npm run build:client` (npm run test:browser does)');
    });
    const page = await browser.newPage();
    await page.goto(
      `http://localhost:${pagePort}/?${new URLSearchParams({ api: api.url, key: TEST_API_KEY }).toString()}`,
    );

    await page.waitForFunction(() => 'outcome' in globalThis, undefined, { timeout: 30_000 });
    const outcome = await page.evaluate(() => (globalThis as unknown as { outcome: unknown }).outcome);

    expect(outcome).toEqual({
      created: { id: expect.any(Number), name: 'Browser Rex', categoryId: 2, status: 'available' },
      names: ['Already Here', 'Browser Rex'],
      fetched: 'Browser Rex',
      warnings: [{ operation: 'getPet', deprecation: '@1795219200', sunset: 'Thu, 05 Dec 2030 00:00:00 GMT' }],
      error: { typed: true, code: 'invalid_request', status: 400, requestId: expect.stringMatching(/^\S+$/) },
    });
    await page.close();
  });
});
