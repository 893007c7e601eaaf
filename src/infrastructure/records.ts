import { EntitySchema, type ValueTransformer } from 'typeorm';
import { PET_STATUSES, type PetStatus } from '../domain/pet-status.js';

/**
 * How TypeORM maps the tables the migrations create. Kept here, as EntitySchemas, so that the
 * domain's Pet stays a plain type with no ORM decorators.
 */

/** bigint arrives as a string; a value a JSON number cannot carry exactly is refused, never rounded. */
export function fromBigint(value: unknown): number {
  const number = typeof value === 'string' || typeof value === 'number' ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(number))
    throw new Error(`bigint ${String(value)} exceeds 2^53-1 and cannot be returned exactly`);
  return number;
}

const safeBigint: ValueTransformer = {
  to: (value: unknown) => value,
  from: (value: unknown) => (value === null ? null : fromBigint(value)),
};

export type PetRecord = { id: number; name: string; categoryId: number; status: PetStatus };

export const PetRecord = new EntitySchema<PetRecord>({
  name: 'PetRecord',
  tableName: 'pets',
  columns: {
    id: { type: 'bigint', primary: true, generated: true, transformer: safeBigint },
    name: { type: 'varchar', length: 255 },
    categoryId: { name: 'category_id', type: 'bigint', transformer: safeBigint },
    status: { type: 'text', enum: [...PET_STATUSES] },
  },
});

export type ApiKeyRecord = { id: number; label: string; keyHash: Buffer; createdAt: Date; revokedAt: Date | null };

export const ApiKeyRecord = new EntitySchema<ApiKeyRecord>({
  name: 'ApiKeyRecord',
  tableName: 'api_keys',
  columns: {
    id: { type: 'bigint', primary: true, generated: true, transformer: safeBigint },
    label: { type: 'text' },
    keyHash: { name: 'key_hash', type: 'bytea' },
    createdAt: { name: 'created_at', type: 'timestamptz', createDate: true },
    revokedAt: { name: 'revoked_at', type: 'timestamptz', nullable: true },
  },
});

export const RECORDS = [PetRecord, ApiKeyRecord];
