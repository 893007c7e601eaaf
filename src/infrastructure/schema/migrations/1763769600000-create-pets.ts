import type { MigrationInterface, QueryRunner } from 'typeorm';

export class CreatePets1763769600000 implements MigrationInterface {
  name = 'CreatePets1763769600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE pets (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        name varchar(255) NOT NULL CHECK (name <> ''),
        category_id bigint NOT NULL CHECK (category_id BETWEEN 1 AND 9007199254740991),
        status text NOT NULL DEFAULT 'available' CHECK (status IN ('available', 'pending', 'sold'))
      )`);
    // Keyset paging with a status filter: WHERE status = $1 AND id > $2 ORDER BY id LIMIT $3.
    await queryRunner.query(`CREATE INDEX pets_status_id_idx ON pets (status, id)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE pets`);
  }
}
