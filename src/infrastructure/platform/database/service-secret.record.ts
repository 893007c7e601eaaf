import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** `service_secrets`: secrets every instance shares (the cursor signing key). Names as the migration creates them. */
@Entity('service_secrets')
export class ServiceSecretRecord {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'service_secrets_pkey' })
  name!: string;

  @Column({ type: 'text' })
  value!: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}
