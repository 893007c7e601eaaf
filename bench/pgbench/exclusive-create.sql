-- The create before issue 29, on the table without the trigger: the id drawn under the pets lock taken exclusive, one create at a time.
WITH serial AS MATERIALIZED (SELECT pg_advisory_xact_lock('pets'::regclass::oid::bigint))
  INSERT INTO pets (name, category_id, status) SELECT 'Rex', 1, 'available' FROM serial RETURNING id;
