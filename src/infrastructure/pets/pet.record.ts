import { Check, Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import { PET_STATUSES, type PetStatus } from '../../domain/pets/pet.js';

/**
 * The `pets` table as the migrations create it, constraint names included: TypeORM's schema
 * builder compares by name, so a record that matches leaves `migration:generate` nothing to write.
 * bigint columns are strings, as pg delivers them; the adapter turns them into exact numbers.
 */
@Entity('pets')
@Index('pets_status_id_idx', ['status', 'id'])
@Check('pets_name_check', `name <> ''`)
@Check('pets_category_id_check', 'category_id BETWEEN 1 AND 9007199254740991')
@Check('pets_status_check', `status IN (${PET_STATUSES.map((status) => `'${status}'`).join(', ')})`)
export class PetRecord {
  @PrimaryGeneratedColumn('identity', {
    type: 'bigint',
    generatedIdentity: 'ALWAYS',
    primaryKeyConstraintName: 'pets_pkey',
  })
  id!: string;

  @Column({ type: 'varchar', length: 255 })
  name!: string;

  @Column({ name: 'category_id', type: 'bigint' })
  categoryId!: string;

  @Column({ type: 'text', default: 'available' })
  status!: PetStatus;
}
