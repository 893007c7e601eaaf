import type { DataSourceOptions } from 'typeorm';
import { ApiKeyRecord } from '../access/api-key.record.js';
import { IdempotencyKeyRecord } from '../pets/idempotency-key.record.js';
import { PetRecord } from '../pets/pet.record.js';
import { type DatabaseWaits, postgresOptions } from '../platform/database/database.js';
import { ServiceSecretRecord } from '../platform/database/service-secret.record.js';
import { MIGRATIONS } from './migrations.js';

/** The service's database: one record per table, and the migrations that make them. */
export function dataSourceOptions(url: string, schema?: string, waits?: DatabaseWaits): DataSourceOptions {
  return postgresOptions(
    url,
    { entities: [PetRecord, ApiKeyRecord, IdempotencyKeyRecord, ServiceSecretRecord], migrations: MIGRATIONS },
    schema,
    waits,
  );
}
