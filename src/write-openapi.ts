// `npm run openapi`: writes the OpenAPI document the service serves to docs/openapi.json, without a
// database (the app is built, never started, on a DataSource that is never connected).
import { mkdir, writeFile } from 'node:fs/promises';
import { DataSource } from 'typeorm';
import { createApp } from './app.js';
import { dataSourceOptions } from './infrastructure/database.js';
import { NoRateLimits } from './infrastructure/rate-limits.js';
import { openApiDocumentOf, SNAPSHOT_SERVERS } from './interface/http/openapi.js';

const app = await createApp({
  dataSource: new DataSource(dataSourceOptions('postgres://unused@127.0.0.1:1/none')),
  environmentKeys: [],
  rateLimits: new NoRateLimits(),
  cursorSecret: 'unused',
  servers: SNAPSHOT_SERVERS,
  log: { level: 'error' },
});
await mkdir('docs', { recursive: true });
await writeFile('docs/openapi.json', `${JSON.stringify(openApiDocumentOf(app), null, 2)}\n`);
await app.close();
