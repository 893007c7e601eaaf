-- The service's pets table (src/infrastructure/schema/migrations) in a schema of its own, for the pgbench scripts
-- here: PGOPTIONS='-c search_path=pgbench_pets' (see docs/performance.md).
DROP SCHEMA IF EXISTS pgbench_pets CASCADE;
CREATE SCHEMA pgbench_pets;
CREATE TABLE pgbench_pets.pets (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name varchar(255) NOT NULL CHECK (name <> ''),
  category_id bigint NOT NULL CHECK (category_id BETWEEN 1 AND 9007199254740991),
  status text NOT NULL DEFAULT 'available' CHECK (status IN ('available', 'pending', 'sold'))
);
CREATE INDEX pets_status_id_idx ON pgbench_pets.pets (status, id);
