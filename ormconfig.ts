// DataSource for the TypeORM CLI (`npm run migration:generate`): the same configuration and
// database choice as the service: DATABASE_URL, else the embedded PostgreSQL in DATA_DIR,
// attached to when a running service holds it.
import { DataSource } from 'typeorm';
import { loadConfig, readEnvFile } from './src/infrastructure/platform/config.js';
import { dataSourceOptions } from './src/infrastructure/schema/data-source-options.js';
import { openDatabaseServer } from './src/infrastructure/platform/database/database-server.js';

readEnvFile();
const { url } = await openDatabaseServer(loadConfig(), { attachToRunning: true });

export default new DataSource(dataSourceOptions(url));
