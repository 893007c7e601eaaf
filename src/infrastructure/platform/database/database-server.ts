import { startEmbeddedPostgres } from './embedded-postgres.js';

/** The PostgreSQL server the service uses: DATABASE_URL's, or the embedded one it started. */
export class DatabaseServer {
  constructor(
    readonly url: string,
    /** Tests only: the schema a test run owns. */
    readonly schema?: string,
    readonly stop: () => Promise<void> = () => Promise.resolve(),
  ) {}
}

/** DATABASE_URL → that server; otherwise the embedded PostgreSQL in dataDir, started (or attached to, for tools). */
export async function openDatabaseServer(
  config: { databaseUrl: string | null; dataDir: string },
  options: { attachToRunning?: boolean } = {},
): Promise<DatabaseServer> {
  if (config.databaseUrl !== null) return new DatabaseServer(config.databaseUrl);
  const embedded = await startEmbeddedPostgres(config.dataDir, options);
  return new DatabaseServer(embedded.url, undefined, () => embedded.stop());
}
