-- The settled mark before issue 41: the pets lock taken exclusive (a 200 ms lock_timeout), which creates queued behind.
WITH waiting AS MATERIALIZED (SELECT set_config('lock_timeout', '200ms', true)),
  barrier AS MATERIALIZED (SELECT pg_advisory_xact_lock('pets'::regclass::oid::bigint) FROM waiting)
  SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence('pets', 'id')::regclass), 0) AS up_to_id,
    pg_current_wal_lsn()::text AS position FROM barrier;
