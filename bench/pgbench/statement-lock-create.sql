-- The service's create from issue 29 to issue 44, on the table without the trigger: the statement itself takes the pets lock shared.
WITH drawing AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared('pets'::regclass::oid::bigint))
  INSERT INTO pets (name, category_id, status) SELECT 'Rex', 1, 'available' FROM drawing RETURNING id;
