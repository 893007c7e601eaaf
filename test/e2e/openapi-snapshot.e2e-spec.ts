import { readFile } from 'node:fs/promises';
import openapiTS, { astToString } from 'openapi-typescript';
import { openTestDatabase, type TestDatabase } from '../support/database.js';
import { startServer, type TestServer } from '../support/server.js';

// The servers `npm run openapi` writes into the snapshot (src/write-openapi.ts).
const SNAPSHOT_SERVERS = { production: 'http://localhost:3000/v1', staging: 'http://localhost:3000/v1' };

let database: TestDatabase;
let server: TestServer;

beforeAll(async () => {
  database = await openTestDatabase();
  server = await startServer(database.dataSource, { servers: SNAPSHOT_SERVERS });
});
afterAll(async () => {
  await server?.close();
  await database?.close();
});

describe('the committed OpenAPI snapshot (docs/openapi.json)', () => {
  it('is the document the service serves: run `npm run openapi` after changing the API', async () => {
    const served: unknown = await (await fetch(`${server.url}/openapi.json`)).json();

    expect(served).toEqual(JSON.parse(await readFile('docs/openapi.json', 'utf8')));
  });

  it('is what the committed typed client (test/client/petstore-api.ts) was generated from', async () => {
    const generated = astToString(await openapiTS(new URL('../../docs/openapi.json', import.meta.url), { redocly: undefined }));

    expect(await readFile('test/client/petstore-api.ts', 'utf8')).toContain(generated.trim());
  });
});
