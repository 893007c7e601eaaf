import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../support/browser.js';
import { openTestDatabase, type TestDatabase } from '../support/database.js';
import { json, startServer, TEST_API_KEY, type TestServer } from '../support/server.js';

let database: TestDatabase;
let server: TestServer;
let browser: Browser;
let page: Page;
const consoleErrors: string[] = [];

beforeAll(async () => {
  database = await openTestDatabase();
  // The default, relative servers: "Try it out" calls whatever host and port the page came from.
  server = await startServer(database, { servers: { production: '/v1', staging: '/v1' } });
  await fetch(`${server.url}/v1/pets`, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ name: 'Browser Rex', categoryId: 1 }),
  });
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  page.on('console', (message) => message.type() === 'error' && consoleErrors.push(message.text()));
  page.on('pageerror', (error) => consoleErrors.push(error.message));
  // Chromium reports a CSP violation on the console too; this names the directive, whatever the wording.
  await page.addInitScript({
    content: `addEventListener('securitypolicyviolation', (event) => console.error('CSP violation: ' + event.effectiveDirective + ' ' + event.blockedURI));`,
  });
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
  await database?.close();
});

describe('Swagger UI at /docs', () => {
  it('loads under its Content-Security-Policy without console errors and shows the three operations, getPet deprecated', async () => {
    const response = await page.goto(`${server.url}/docs`);
    await page.locator('.opblock').first().waitFor();

    // helmet's policy for the page: only its own scripts, nothing inline.
    expect(response?.headers()['content-security-policy']).toContain("script-src 'self';");

    // Swagger UI gives a deprecated operation's path its own class, and strikes it through.
    const operations = await page.locator('.opblock-summary-path, .opblock-summary-path__deprecated').allInnerTexts();
    expect(operations.map((path) => path.replace(/\u200b/g, '').trim()).sort()).toEqual([
      '/pets',
      '/pets',
      '/pets/{petId}',
    ]);
    expect(await page.locator('.opblock-deprecated .opblock-summary-path__deprecated').innerText()).toContain(
      '/pets/{petId}',
    );
    expect(consoleErrors).toEqual([]);
  });

  it('lists pets through "Try it out" with a bearer key, with no CSP violation', async () => {
    await page
      .getByRole('button', { name: /authorize/i })
      .first()
      .click();
    await page.locator('#auth-bearer-value').fill(TEST_API_KEY);
    await page.locator('.modal-ux button.authorize').click();
    await page.locator('.modal-ux button.btn-done').click();

    const listPets = page.locator('#operations-pets-listPets');
    await listPets.locator('.opblock-summary').click();
    await listPets.getByRole('button', { name: 'Try it out' }).click();
    await listPets.getByRole('button', { name: 'Execute' }).click();
    const responseBody = listPets.locator('.live-responses-table tr.response .response-col_description pre').first();
    await responseBody.waitFor();

    expect(
      await listPets.locator('.live-responses-table tr.response .response-col_status').first().innerText(),
    ).toContain('200');
    expect(await responseBody.innerText()).toContain('Browser Rex');
    // Outside the tracked tree: running the tests leaves the working tree clean.
    await page.screenshot({ path: 'test-results/swagger-ui.png', fullPage: true });
    expect(consoleErrors).toEqual([]);
  });
});
