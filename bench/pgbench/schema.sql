-- The pets table for the pgbench scripts here, twice, each in a schema of its own (run.sh picks one
-- per run with PGOPTIONS='-c search_path=...'; see docs/performance.md):
--   pgbench_pets        as the service's migrations make it (src/infrastructure/schema/migrations),
--                       with the trigger that takes the pets lock for every insert (issue 44);
--   pgbench_plain_pets  without that trigger: the obvious app's table, and the service's before issue 44.
DROP SCHEMA IF EXISTS pgbench_pets CASCADE;
DROP SCHEMA IF EXISTS pgbench_plain_pets CASCADE;
CREATE SCHEMA pgbench_pets;
CREATE SCHEMA pgbench_plain_pets;
CREATE TABLE pgbench_plain_pets.pets (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name varchar(255) NOT NULL CHECK (name <> ''),
  category_id bigint NOT NULL CHECK (category_id BETWEEN 1 AND 9007199254740991),
  status text NOT NULL DEFAULT 'available' CHECK (status IN ('available', 'pending', 'sold'))
);
CREATE INDEX pets_status_id_idx ON pgbench_plain_pets.pets (status, id);

SET search_path = pgbench_pets;
CREATE TABLE pets (LIKE pgbench_plain_pets.pets INCLUDING ALL);
-- As migration 1795737600000-pets-ids-drawn-under-lock.ts makes them.
CREATE FUNCTION pets_take_lock() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock_shared(TG_RELID::bigint);
  RETURN NULL;
END $$;
CREATE TRIGGER pets_take_lock BEFORE INSERT ON pets
  FOR EACH STATEMENT EXECUTE FUNCTION pets_take_lock();
CREATE FUNCTION pets_refuse_given_id() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'cannot insert id % into pets: ids are drawn by the database', NEW.id
    USING ERRCODE = 'generated_always', HINT = 'Leave id to its default; paging needs every id drawn under the pets lock.';
END $$;
CREATE TRIGGER pets_refuse_given_id BEFORE INSERT ON pets
  FOR EACH ROW WHEN (NEW.id IS DISTINCT FROM currval('pets_id_seq')) EXECUTE FUNCTION pets_refuse_given_id();
