import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/** The row shape of `pets`. No behaviour: the rules live in domain/pet.ts. */
@Entity({ name: 'pets' })
@Index('pets_status_id_idx', ['status', 'id'])
export class PetRecord {
  // pg returns bigint as a string; the repository maps it to a number.
  @PrimaryGeneratedColumn('identity', { type: 'bigint', generatedIdentity: 'ALWAYS' })
  id!: string;

  @Column({ type: 'varchar', length: 255 })
  name!: string;

  @Column({ name: 'category_id', type: 'bigint' })
  categoryId!: string;

  @Column({ type: 'text' })
  status!: string;
}
