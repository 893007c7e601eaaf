// DataSource for the TypeORM CLI (`npm run migration:generate`), started as the command-line tools
// start (src/cli.ts): the same configuration and database as the service.
import { DataSource } from 'typeorm';
import { openServiceDatabase } from './src/cli.js';
import { dataSourceOptions } from './src/infrastructure/schema/data-source-options.js';

const { server } = await openServiceDatabase();

export default new DataSource(dataSourceOptions(server.url));
