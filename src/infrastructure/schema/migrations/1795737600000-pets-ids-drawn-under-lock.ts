import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Exact paging needs every id of `pets` drawn under the pets lock taken shared and held until the
 * transaction ends (docs/internals.md, "Exact paging"). The database takes it, so that no insert
 * can forget it: the service's, a TypeORM save(), a script, a back-fill, psql, COPY.
 *
 * A statement trigger, because PostgreSQL fires BEFORE STATEMENT triggers before it evaluates the
 * first row and with it the identity default (nextval); a row trigger would run after. A second,
 * row trigger refuses an id that the row's default did not just draw (OVERRIDING SYSTEM VALUE, or
 * COPY of an id column): such an id was drawn without the lock, or not at all.
 */
export class PetsIdsDrawnUnderLock1795737600000 implements MigrationInterface {
  name = 'PetsIdsDrawnUnderLock1795737600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    // The key is stated (TG_RELID: the pets table's own oid), not imported: a migration once run must keep doing what it did.
    await queryRunner.query(`
      CREATE FUNCTION pets_take_lock() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_advisory_xact_lock_shared(TG_RELID::bigint);
        RETURN NULL;
      END $$`);
    await queryRunner.query(`
      CREATE TRIGGER pets_take_lock BEFORE INSERT ON pets
        FOR EACH STATEMENT EXECUTE FUNCTION pets_take_lock()`);
    await queryRunner.query(`
      CREATE FUNCTION pets_refuse_given_id() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'cannot insert id % into pets: ids are drawn by the database', NEW.id
          USING ERRCODE = 'generated_always', HINT = 'Leave id to its default; paging needs every id drawn under the pets lock.';
      END $$`);
    // currval() is the id this session drew last: for a row whose default was evaluated, this row's.
    await queryRunner.query(`
      CREATE TRIGGER pets_refuse_given_id BEFORE INSERT ON pets
        FOR EACH ROW WHEN (NEW.id IS DISTINCT FROM currval('pets_id_seq')) EXECUTE FUNCTION pets_refuse_given_id()`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER pets_refuse_given_id ON pets`);
    await queryRunner.query(`DROP FUNCTION pets_refuse_given_id()`);
    await queryRunner.query(`DROP TRIGGER pets_take_lock ON pets`);
    await queryRunner.query(`DROP FUNCTION pets_take_lock()`);
  }
}
