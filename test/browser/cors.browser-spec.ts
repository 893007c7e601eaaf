import { createServer, type Server } from 'node:http';
import type { Browser, Page } from 'playwright-core';
import { FlexibleRateLimits } from '../../src/infrastructure/platform/rate-limits/flexible-rate-limits.js';
import { launchChromium } from '../support/browser.js';
import { openTestDatabase, type TestDatabase } from '../support/database.js';
import { json, startServer, TEST_API_KEY, type TestServer } from '../support/server.js';

let database: TestDatabase;
let api: TestServer;
/** Serves an empty page: opened as http://localhost:<port> it is the listed origin, as http://127.0.0.1:<port> it is not. */
let pages: Server;
let pagePort: number;
let browser: Browser;

beforeAll(async () => {
  database = await openTestDatabase();
  pages = createServer((_request, response) => {
    response.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    response.end('<!doctype html><title>Shelter</title><p>A shelter page on its own origin.</p>');
  });
  await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
  const address = pages.address();
  if (typeof address !== 'object' || address === null) throw new Error('the page server is not listening on TCP');
  pagePort = address.port;
  api = await startServer(database, {
    corsOrigins: `http://localhost:${pagePort}`,
    rateLimits: new FlexibleRateLimits({ perKeyPerMinute: 1000, failedAuthenticationsPerMinute: 100 }, null),
  });
  // One pet already there: with limit=1 the first page has a next page.
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

async function openPage(origin: string): Promise<Page> {
  const page = await browser.newPage();
  await page.goto(`${origin}/`);
  return page;
}

describe('a page on another origin calling the API', () => {
  it('from a listed origin: lists pets, creates one with an Idempotency-Key, follows Link and reads Location', async () => {
    const page = await openPage(`http://localhost:${pagePort}`);

    // Runs in the page: what the page's own script would do, under the browser's CORS rules.
    const seen = await page.evaluate(
      async ({ base, key }) => {
        const auth = { Authorization: `Bearer ${key}` };
        const create = () =>
          fetch(`${base}/v1/pets`, {
            method: 'POST',
            headers: { ...auth, 'Content-Type': 'application/json', 'Idempotency-Key': 'shelter-page-1' },
            body: JSON.stringify({ name: 'Cross Origin Rex', categoryId: 2 }),
          });
        const created = await create();
        const retried = await create();
        const first = await fetch(`${base}/v1/pets?limit=1`, { headers: auth });
        const link = first.headers.get('Link');
        const next = /^<([^>]+)>; rel="next"$/.exec(link ?? '')?.[1];
        const second = next === undefined ? null : await fetch(new URL(next, base), { headers: auth });
        const names = (body: unknown) => (Array.isArray(body) ? body.map((pet: { name?: unknown }) => pet.name) : body);
        return {
          created: created.status,
          location: created.headers.get('Location'),
          retried: retried.status,
          replayed: retried.headers.get('Idempotent-Replayed'),
          first: first.status,
          firstNames: names(await first.json()),
          link,
          rateLimit: first.headers.get('RateLimit'),
          second: second?.status,
          secondNames: names(await second?.json()),
        };
      },
      { base: api.url, key: TEST_API_KEY },
    );

    expect(seen).toMatchObject({
      created: 201,
      retried: 201,
      replayed: 'true',
      first: 200,
      firstNames: ['Already Here'],
      second: 200,
      secondNames: ['Cross Origin Rex'],
    });
    expect(seen.location).toMatch(/^\/v1\/pets\/\d+$/);
    expect(seen.link).toContain('rel="next"');
    expect(seen.rateLimit).toMatch(/^"per-key";r=\d+;t=\d+$/);
    await page.close();
  });

  it('from an origin not listed: the browser refuses the answer', async () => {
    const page = await openPage(`http://127.0.0.1:${pagePort}`);

    const outcome = await page.evaluate(
      async ({ base, key }) => {
        try {
          const response = await fetch(`${base}/v1/pets`, { headers: { Authorization: `Bearer ${key}` } });
          return `answered ${response.status}`;
        } catch (error) {
          return String(error);
        }
      },
      { base: api.url, key: TEST_API_KEY },
    );

    expect(outcome).toBe('TypeError: Failed to fetch');
    await page.close();
  });
});
