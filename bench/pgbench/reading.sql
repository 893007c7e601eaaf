-- The high-water mark's reading (src/infrastructure/pets/typeorm-high-water-mark-reading.ts), on
-- pgbench_pets: the sequence, then the writers (RowExclusiveLock on pets), then the WAL insert
-- position and timeline, and the guards' facts.
WITH drawn AS MATERIALIZED (
    SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence('pets', 'id')::regclass), 0) AS up_to_id),
  writing AS MATERIALIZED (
    SELECT up_to_id, ARRAY(SELECT virtualtransaction FROM pg_locks WHERE locktype = 'relation' AND relation = 'pets'::regclass
      AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND mode = 'RowExclusiveLock' AND granted AND pid IS DISTINCT FROM pg_backend_pid() AND drawn.up_to_id IS NOT NULL) AS writers
    FROM drawn)
  SELECT up_to_id::text, writers, pg_current_wal_insert_lsn()::text AS lsn,
    ('x' || substr(pg_walfile_name(pg_current_wal_insert_lsn()), 1, 8))::bit(32)::int AS timeline,
    (SELECT coalesce(max(id), 0) FROM pets)::text AS max_id,
    (SELECT seqcache FROM pg_sequence WHERE seqrelid = pg_get_serial_sequence('pets', 'id')::regclass)::text AS cache,
    ARRAY(SELECT tgname || '=' || tgenabled::text FROM pg_trigger WHERE tgrelid = 'pets'::regclass AND NOT tgisinternal) AS triggers
  FROM writing;
