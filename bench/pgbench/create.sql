-- The service's create (src/infrastructure/pets/typeorm-pet-repository.ts): the id drawn under the pets lock taken shared.
WITH drawing AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared('pets'::regclass::oid::bigint))
  INSERT INTO pets (name, category_id, status) SELECT 'Rex', 1, 'available' FROM drawing RETURNING id;
