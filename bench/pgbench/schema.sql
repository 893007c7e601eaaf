-- The pets table for the pgbench scripts here, three times, each in a schema of its own (run.sh picks
-- one per run with PGOPTIONS='-c search_path=...'; see docs/performance.md):
--   pgbench_plain_pets   without triggers: the obvious app's table;
--   pgbench_pets_before  with the triggers of migration 1795737600000 (issue 44): a statement trigger
--                        takes the pets advisory lock shared, a row trigger refuses a given id;
--   pgbench_pets         as the service's migrations make it now (1796083200000, issue 52): a
--                        statement trigger notes the floor, a row trigger refuses an id not above it.
DROP SCHEMA IF EXISTS pgbench_pets CASCADE;
DROP SCHEMA IF EXISTS pgbench_pets_before CASCADE;
DROP SCHEMA IF EXISTS pgbench_plain_pets CASCADE;
CREATE SCHEMA pgbench_pets;
CREATE SCHEMA pgbench_pets_before;
CREATE SCHEMA pgbench_plain_pets;
CREATE TABLE pgbench_plain_pets.pets (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name varchar(255) NOT NULL CHECK (name <> ''),
  category_id bigint NOT NULL CHECK (category_id BETWEEN 1 AND 9007199254740991),
  status text NOT NULL DEFAULT 'available' CHECK (status IN ('available', 'pending', 'sold'))
);
CREATE INDEX pets_status_id_idx ON pgbench_plain_pets.pets (status, id);

SET search_path = pgbench_pets_before;
CREATE TABLE pets (LIKE pgbench_plain_pets.pets INCLUDING ALL);
CREATE FUNCTION pets_take_lock() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock_shared(TG_RELID::bigint);
  RETURN NULL;
END $$;
CREATE TRIGGER pets_take_lock BEFORE INSERT ON pets FOR EACH STATEMENT EXECUTE FUNCTION pets_take_lock();
CREATE FUNCTION pets_refuse_given_id() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'cannot insert id % into pets: ids are drawn by the database', NEW.id USING ERRCODE = 'generated_always';
END $$;
CREATE TRIGGER pets_refuse_given_id BEFORE INSERT ON pets
  FOR EACH ROW WHEN (NEW.id IS DISTINCT FROM currval('pets_id_seq')) EXECUTE FUNCTION pets_refuse_given_id();

SET search_path = pgbench_pets;
CREATE TABLE pets (LIKE pgbench_plain_pets.pets INCLUDING ALL);
CREATE FUNCTION pets_note_id_floor() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('petstore.pets_id_floor', (
    SELECT CASE WHEN (SELECT id FROM pgbench_pets.pets WHERE id > drawn ORDER BY id LIMIT 1) IS NULL
      THEN drawn ELSE 9223372036854775807 END
    FROM (SELECT coalesce(pg_sequence_last_value('pgbench_pets.pets_id_seq'::regclass), 0) AS drawn) AS sequence)::text, true);
  RETURN NULL;
END $$;
CREATE TRIGGER pets_note_id_floor BEFORE INSERT ON pets FOR EACH STATEMENT EXECUTE FUNCTION pets_note_id_floor();
CREATE FUNCTION pets_refuse_id() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'id % of pets refused', NEW.id USING ERRCODE = 'serialization_failure';
END $$;
CREATE TRIGGER pets_refuse_id BEFORE INSERT ON pets FOR EACH ROW
  WHEN (NEW.id IS DISTINCT FROM currval('pgbench_pets.pets_id_seq'::regclass)
    OR NEW.id <= coalesce(nullif(current_setting('petstore.pets_id_floor', true), '')::bigint, 9223372036854775807))
  EXECUTE FUNCTION pets_refuse_id();
ALTER TABLE pets ENABLE ALWAYS TRIGGER pets_note_id_floor, ENABLE ALWAYS TRIGGER pets_refuse_id;
