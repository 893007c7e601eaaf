import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

export const PET_STATUSES = ['available', 'pending', 'sold'] as const;
export type PetStatus = (typeof PET_STATUSES)[number];

@Entity('pets')
export class Pet {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id!: number;

  @Column({ type: 'varchar', length: 255 })
  name!: string;

  @Column({ name: 'category_id', type: 'bigint' })
  categoryId!: number;

  @Column({ type: 'text', default: 'available' })
  status!: PetStatus;
}
