import type { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateIdempotencyKeys1763769700000 implements MigrationInterface {
  name = 'CreateIdempotencyKeys1763769700000';

  async up(queryRunner: QueryRunner): Promise<void> {
    // The primary key is the guarantee across instances; the response is kept as sent (text,
    // not jsonb, which would reorder the keys of a replayed body).
    await queryRunner.query(`
      CREATE TABLE idempotency_keys (
        caller text NOT NULL,
        key text NOT NULL CHECK (char_length(key) BETWEEN 1 AND 255),
        fingerprint text NOT NULL,
        response_status integer NOT NULL,
        response_body text NOT NULL,
        response_location text,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        PRIMARY KEY (caller, key)
      )`);
    await queryRunner.query(`CREATE INDEX idempotency_keys_expires_at_idx ON idempotency_keys (expires_at)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE idempotency_keys`);
  }
}
