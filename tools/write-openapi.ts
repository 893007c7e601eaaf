// `npm run openapi`: writes the OpenAPI document the service serves (its /openapi.json, asked for
// on a loopback port) to docs/openapi.json, without a database: the app is built with the database server and TypeORM's DataSource replaced by
// stand-ins that are never connected (and a cursor secret given, so none is read from the database).
import { mkdir, writeFile } from 'node:fs/promises';
import { Test } from '@nestjs/testing';
import { getDataSourceToken } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { APP_OPTIONS, configureApp, createExpressAdapter } from '../src/app.js';
import { AppModule } from '../src/app.module.js';
import { loadConfig, petstoreConfig } from '../src/infrastructure/platform/config.js';
import { dataSourceOptions } from '../src/infrastructure/schema/data-source-options.js';
import { DatabaseServer } from '../src/infrastructure/platform/database/database-server.js';

const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
  .overrideProvider(petstoreConfig.KEY)
  .useValue(loadConfig({ LOG_LEVEL: 'error', CURSOR_SECRET: 'unused' }))
  .overrideProvider(DatabaseServer)
  .useValue(new DatabaseServer('postgres://unused@127.0.0.1:1/none'))
  .overrideProvider(getDataSourceToken())
  .useValue(new DataSource(dataSourceOptions('postgres://unused@127.0.0.1:1/none')))
  .compile();
const app = await configureApp(moduleRef.createNestApplication(createExpressAdapter(), APP_OPTIONS));
await app.listen(0, '127.0.0.1');
const served = await fetch(`${await app.getUrl()}/openapi.json`);
if (!served.ok) throw new Error(`GET /openapi.json answered ${served.status}`);
await mkdir('docs', { recursive: true });
await writeFile('docs/openapi.json', `${JSON.stringify(await served.json(), null, 2)}\n`);
await app.close();
