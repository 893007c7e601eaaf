import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Secrets every instance must share (the cursor signing key), made by the first instance that needs one. */
export class CreateServiceSecrets1795478400000 implements MigrationInterface {
  name = 'CreateServiceSecrets1795478400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE service_secrets (name text PRIMARY KEY, value text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE service_secrets`);
  }
}
