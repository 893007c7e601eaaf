import { Check, Column, CreateDateColumn, Entity, PrimaryGeneratedColumn, Unique } from 'typeorm';

/** `api_keys`: only the SHA-256 of a key is kept. Names as the migrations create them (see pet.record.ts). */
@Entity('api_keys')
@Unique('api_keys_key_hash_key', ['keyHash'])
@Check('api_keys_label_check', 'char_length(label) BETWEEN 1 AND 100')
@Check('api_keys_key_hash_check', 'octet_length(key_hash) = 32')
export class ApiKeyRecord {
  @PrimaryGeneratedColumn('identity', {
    type: 'bigint',
    generatedIdentity: 'ALWAYS',
    primaryKeyConstraintName: 'api_keys_pkey',
  })
  id!: string;

  @Column({ type: 'text' })
  label!: string;

  @Column({ name: 'key_hash', type: 'bytea' })
  keyHash!: Buffer;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt!: Date | null;
}
