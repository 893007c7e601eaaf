import type { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateApiKeys1763769800000 implements MigrationInterface {
  name = 'CreateApiKeys1763769800000';

  async up(queryRunner: QueryRunner): Promise<void> {
    // Only the SHA-256 of a key is kept: a copy of this table does not let anyone call the API.
    await queryRunner.query(`
      CREATE TABLE api_keys (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        label text NOT NULL CHECK (char_length(label) BETWEEN 1 AND 100),
        key_hash bytea NOT NULL UNIQUE CHECK (octet_length(key_hash) = 32),
        created_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE api_keys`);
  }
}
