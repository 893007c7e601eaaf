import { Check, Column, CreateDateColumn, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { PetRecord } from './pet.record.js';

/** `idempotency_keys`: one create per (caller, key), pointing at the pet it made. Names as the migrations create them (see pet.record.ts). */
@Entity('idempotency_keys')
@Index('idempotency_keys_expires_at_idx', ['expiresAt'])
@Check('idempotency_keys_key_check', 'char_length(key) BETWEEN 1 AND 255')
export class IdempotencyKeyRecord {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'idempotency_keys_pkey' })
  caller!: string;

  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'idempotency_keys_pkey' })
  key!: string;

  @Column({ type: 'text' })
  fingerprint!: string;

  @Column({ name: 'pet_id', type: 'bigint' })
  @ForeignKey(() => PetRecord, { name: 'idempotency_keys_pet_id_fkey' })
  petId!: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt!: Date;
}
