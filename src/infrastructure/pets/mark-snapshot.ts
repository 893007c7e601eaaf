/**
 * One look at the store: the highest id drawn, then the creates in flight (their transactions'
 * ids), then the store's position. Read in that order, every id up to `upToId` is settled once
 * each of `holders` has ended (docs/internals.md, "Exact paging"). `look` places a look one
 * instance made for the others (shared-looks.ts).
 */
export type MarkSnapshot = { upToId: number; holders: string[]; position: string; look?: LookOrder };

/**
 * A look's place among the looks one instance published: they run one after another, so a later
 * one read `pg_locks` after an earlier one, and a holder the earlier one listed and the later one
 * does not has ended.
 */
export type LookOrder = { looker: string; seq: number };
