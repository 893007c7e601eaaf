export type PoolUsage = { total: number; idle: number; waiting: number };

/** How the connections to the store are used right now (for metrics). */
export abstract class DatabasePool {
  abstract usage(): PoolUsage;
}
