-- The settled mark's look before issue 52 (the pets advisory lock's holders, the write position), on
-- pgbench_pets_before. No lock taken; a page whose look lists holders looks again until they have ended.
WITH drawn AS MATERIALIZED (
    SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence('pets', 'id')::regclass), 0) AS up_to_id),
  holding AS MATERIALIZED (
    SELECT up_to_id, ARRAY(SELECT virtualtransaction FROM pg_locks
      WHERE locktype = 'advisory' AND classid = ('pets'::regclass::oid::bigint >> 32)::oid
        AND objid = ('pets'::regclass::oid::bigint & 4294967295)::oid AND objsubid = 1
        AND granted AND pid <> pg_backend_pid() AND drawn.up_to_id IS NOT NULL) AS holders
    FROM drawn)
  SELECT up_to_id::text, holders, pg_current_wal_lsn()::text AS position FROM holding;
