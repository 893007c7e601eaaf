import type { MigrationInterface, QueryRunner } from 'typeorm';
import { propertyOf } from '../../platform/property-of.js';
import { PetsIdsDrawnUnderLock1795737600000 } from './1795737600000-pets-ids-drawn-under-lock.js';

/**
 * The writers of `pets` in flight are known by the table lock every insert takes (RowExclusiveLock,
 * before any row is made, held to the transaction's end), which no trigger state or session
 * setting can skip: the advisory lock the previous migration's trigger took is no longer needed.
 *
 * What the table lock cannot vouch for is the id itself: one drawn from a session's sequence cache
 * (`ALTER SEQUENCE ... CACHE n`), after the sequence was set back (RESTART, setval, CYCLE), or
 * given by the writer. A statement trigger notes the floor, the highest id drawn when the statement
 * starts (the largest bigint while ids above that are stored), and a row trigger refuses an id that
 * is not above it or is not the one its default just drew. A cached id is refused with SQLSTATE
 * 40001 (retry) once the session's cache is discarded, so a retry draws a fresh one. Both fire
 * ALWAYS: also for sessions with `session_replication_role = replica`. docs/internals.md, "Exact
 * paging", says why each is needed.
 */
export class PetsIdsAboveTheFloor1796083200000 implements MigrationInterface {
  name = 'PetsIdsAboveTheFloor1796083200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await new PetsIdsDrawnUnderLock1795737600000().down(queryRunner);
    // The names are written in qualified: a writer's search_path decides nothing.
    const rows: unknown = await queryRunner.query(
      `SELECT format('%I.pets', current_schema()) AS pets, pg_get_serial_sequence(format('%I.pets', current_schema()), 'id') AS sequence`,
    );
    const names: unknown = Array.isArray(rows) ? rows[0] : undefined;
    const pets = propertyOf(names, 'pets');
    const sequence = propertyOf(names, 'sequence');
    if (typeof pets !== 'string' || typeof sequence !== 'string')
      throw new Error('no pets table in the current schema');
    await queryRunner.query(`
      CREATE FUNCTION pets_note_id_floor() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        -- One statement: its snapshot is taken before the sequence is read, so every row it sees
        -- has an id drawn before, at or below last_value, unless the sequence was set back. Then
        -- nothing is above the floor until the sequence has passed every stored id. A probe for
        -- one id above, not max(id), which walks back over the rows still being inserted.
        PERFORM set_config('petstore.pets_id_floor', (
          SELECT CASE WHEN (SELECT id FROM ${pets} WHERE id > drawn ORDER BY id LIMIT 1) IS NULL
            THEN drawn ELSE 9223372036854775807 END
          FROM (SELECT coalesce(pg_sequence_last_value('${sequence}'::regclass), 0) AS drawn) AS sequence)::text, true);
        RETURN NULL;
      END $$`);
    await queryRunner.query(`
      CREATE TRIGGER pets_note_id_floor BEFORE INSERT ON pets
        FOR EACH STATEMENT EXECUTE FUNCTION pets_note_id_floor()`);
    await queryRunner.query(`
      CREATE FUNCTION pets_refuse_id() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.id IS DISTINCT FROM currval('${sequence}'::regclass) THEN
          RAISE EXCEPTION 'cannot insert id % into pets: ids are drawn by the database', NEW.id
            USING ERRCODE = 'generated_always', HINT = 'Leave id to its default.';
        END IF;
        EXECUTE 'DISCARD SEQUENCES';
        RAISE EXCEPTION 'id % of pets is not above %, the floor when the statement began (the highest id drawn, or the largest bigint while ids above it are stored): it came from a sequence cache, or the sequence was set back',
          NEW.id, current_setting('petstore.pets_id_floor', true)
          USING ERRCODE = 'serialization_failure',
            HINT = 'This session''s cached ids were discarded: retry. Keep the sequence at CACHE 1 and ahead of every id stored.';
      END $$`);
    // Evaluated by PostgreSQL itself: a create pays two comparisons, not a PL/pgSQL call. A floor
    // that was not noted (the statement trigger did not fire) refuses the row.
    await queryRunner.query(`
      CREATE TRIGGER pets_refuse_id BEFORE INSERT ON pets FOR EACH ROW
        WHEN (NEW.id IS DISTINCT FROM currval('${sequence}'::regclass)
          OR NEW.id <= coalesce(nullif(current_setting('petstore.pets_id_floor', true), '')::bigint, 9223372036854775807))
        EXECUTE FUNCTION pets_refuse_id()`);
    await queryRunner.query(
      `ALTER TABLE pets ENABLE ALWAYS TRIGGER pets_note_id_floor, ENABLE ALWAYS TRIGGER pets_refuse_id`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER pets_refuse_id ON pets`);
    await queryRunner.query(`DROP FUNCTION pets_refuse_id()`);
    await queryRunner.query(`DROP TRIGGER pets_note_id_floor ON pets`);
    await queryRunner.query(`DROP FUNCTION pets_note_id_floor()`);
    await new PetsIdsDrawnUnderLock1795737600000().up(queryRunner);
  }
}
