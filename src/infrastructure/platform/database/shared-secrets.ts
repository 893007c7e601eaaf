import { randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { propertyOf } from '../property-of.js';

/**
 * A secret shared by every instance on this database, and kept across restarts: the first
 * instance that asks makes it (256 random bits), the others read the same one.
 */
export async function sharedSecret(dataSource: DataSource, name: string): Promise<string> {
  const rows: unknown = await dataSource.query(
    `WITH made AS (INSERT INTO service_secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING RETURNING value)
     SELECT value FROM made UNION ALL SELECT value FROM service_secrets WHERE name = $1`,
    [name, randomBytes(32).toString('base64url')],
  );
  const row: unknown = Array.isArray(rows) ? rows[0] : undefined;
  const value = propertyOf(row, 'value');
  if (typeof value !== 'string') throw new Error(`service secret ${name} could not be read`);
  return value;
}
