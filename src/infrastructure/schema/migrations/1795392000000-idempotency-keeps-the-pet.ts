import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A retry needs the pet the first request created, not a copy of an HTTP answer: the record
 * points at the pet (pets are never changed or deleted), and the HTTP layer builds the answer.
 */
export class IdempotencyKeepsThePet1795392000000 implements MigrationInterface {
  name = 'IdempotencyKeepsThePet1795392000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE idempotency_keys ADD COLUMN pet_id bigint REFERENCES pets (id)`);
    await queryRunner.query(`UPDATE idempotency_keys SET pet_id = (response_body::jsonb ->> 'id')::bigint`);
    await queryRunner.query(`DELETE FROM idempotency_keys WHERE pet_id IS NULL`);
    await queryRunner.query(`ALTER TABLE idempotency_keys ALTER COLUMN pet_id SET NOT NULL`);
    await queryRunner.query(
      `ALTER TABLE idempotency_keys DROP COLUMN response_status, DROP COLUMN response_body, DROP COLUMN response_location`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE idempotency_keys ADD COLUMN response_status integer, ADD COLUMN response_body text, ADD COLUMN response_location text`);
    await queryRunner.query(`
      UPDATE idempotency_keys k SET response_status = 201, response_location = '/v1/pets/' || p.id,
        response_body = json_build_object('id', p.id, 'name', p.name, 'categoryId', p.category_id, 'status', p.status)::text
        FROM pets p WHERE p.id = k.pet_id`);
    await queryRunner.query(
      `ALTER TABLE idempotency_keys ALTER COLUMN response_status SET NOT NULL, ALTER COLUMN response_body SET NOT NULL`,
    );
    await queryRunner.query(`ALTER TABLE idempotency_keys DROP COLUMN pet_id`);
  }
}
