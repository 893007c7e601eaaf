import { hash as digest, randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { IsNull, type Repository } from 'typeorm';
import { type ApiKeyInfo, ApiKeys, type IssuedApiKey, type RevokeResult } from '../../application/access/api-keys.js';
import type { ApiKeyRecord } from './api-key.record.js';
import { fromBigint } from '../platform/database/bigint.js';
import { translateStoreErrors } from '../platform/database/store-errors.js';

export type ApiKeyCacheOptions = {
  /** How long a verdict on a stored key is trusted without asking the database: the revocation bound. */
  seconds: number;
  /** Verdicts kept at most, so that a flood of random keys cannot grow memory. */
  maxEntries: number;
};

export const DEFAULT_API_KEY_CACHE: ApiKeyCacheOptions = { seconds: 5, maxEntries: 10_000 };

/** Stored keys (SHA-256 hashes in `api_keys`) plus the keys of API_KEYS. */
export class TypeOrmApiKeys extends ApiKeys {
  /**
   * The keys of API_KEYS, by the key itself: the process holds them in its environment already,
   * so this keeps no secret that is not there anyway, and spares a SHA-256 per request. A lookup
   * compares the presented string with a key only when V8's seeded hashes of the two are equal,
   * so its time does not tell a guess how close it came. Stored keys stay known only by their hash.
   */
  private readonly environmentCallers: Map<string, string>;
  private readonly verdicts: LRUCache<string, boolean> | null;

  constructor(
    private readonly records: Repository<ApiKeyRecord>,
    environmentKeys: string[],
    cache: ApiKeyCacheOptions = DEFAULT_API_KEY_CACHE,
    now: () => number = Date.now,
  ) {
    super();
    this.environmentCallers = new Map(environmentKeys.map((key) => [key, callerId(key)]));
    // lru-cache reads a ttl of 0 as "never expires": 0 seconds means no cache at all. Bounded by
    // maxSize, one per entry: `max` would allocate room for every entry up front.
    this.verdicts =
      cache.seconds > 0
        ? new LRUCache({
            maxSize: cache.maxEntries,
            sizeCalculation: () => 1,
            ttl: cache.seconds * 1000,
            ttlResolution: 0,
            perf: { now },
          })
        : null;
  }

  /** The caller id is the key's SHA-256 (hex), never the key. */
  async identify(key: string): Promise<string | null> {
    const known = this.recognise(key);
    if (known !== null) return known;
    const id = callerId(key);
    const valid = await translateStoreErrors(() =>
      this.records.existsBy({ keyHash: Buffer.from(id, 'hex'), revokedAt: IsNull() }),
    );
    if (!valid) return null;
    // Only valid keys are remembered: random wrong keys cannot push them out.
    this.verdicts?.set(id, true);
    return id;
  }

  recognise(key: string): string | null {
    const fromEnvironment = this.environmentCallers.get(key);
    if (fromEnvironment !== undefined) return fromEnvironment;
    if (this.verdicts === null) return null;
    const id = callerId(key);
    // Keyed by the hash, so the cache lookup's timing says nothing about the key either.
    return this.verdicts.get(id) === true ? id : null;
  }

  async issue(label: string): Promise<IssuedApiKey> {
    const key = newKey();
    const { identifiers } = await translateStoreErrors(() => this.records.insert({ label, keyHash: sha256(key) }));
    // The id TypeORM read back from RETURNING, before any transformer.
    const id = fromBigint(identifiers[0]?.id);
    return { id, label, key };
  }

  async list(): Promise<ApiKeyInfo[]> {
    const rows = await translateStoreErrors(() => this.records.find({ order: { id: 'ASC' } }));
    return rows.map((row) => ({
      id: fromBigint(row.id),
      label: row.label,
      createdAt: row.createdAt,
      revokedAt: row.revokedAt,
    }));
  }

  async revoke(id: number): Promise<RevokeResult> {
    const { affected } = await translateStoreErrors(() =>
      this.records.update({ id: String(id), revokedAt: IsNull() }, { revokedAt: () => 'now()' }),
    );
    if (affected === 0)
      return (await translateStoreErrors(() => this.records.existsBy({ id: String(id) })))
        ? 'already_revoked'
        : 'not_found';
    // This instance forgets at once; the others within the cache's seconds.
    this.verdicts?.clear();
    return 'revoked';
  }

  async hasUsableKey(): Promise<boolean> {
    if (this.environmentCallers.size > 0) return true;
    return translateStoreErrors(() => this.records.existsBy({ revokedAt: IsNull() }));
  }

  async issueIfNone(label: string): Promise<IssuedApiKey | null> {
    if (this.environmentCallers.size > 0) return null;
    const key = newKey();
    const rows: unknown = await translateStoreErrors(() =>
      this.records.manager.transaction(async (manager) => {
        // Without the lock, two instances starting at once would both find no key (READ COMMITTED
        // sees neither's uncommitted row) and both issue one. The second waits here, and its
        // INSERT then sees the first one's committed key.
        await manager.query('SELECT pg_advisory_xact_lock($1, $2)', FIRST_RUN_LOCK);
        return manager.query<unknown>(
          'INSERT INTO api_keys (label, key_hash) SELECT $1, $2 WHERE NOT EXISTS (SELECT 1 FROM api_keys WHERE revoked_at IS NULL) RETURNING id',
          [label, sha256(key)],
        );
      }),
    );
    const row: unknown = Array.isArray(rows) ? rows[0] : undefined;
    if (typeof row !== 'object' || row === null) return null;
    return { id: fromBigint(Reflect.get(row, 'id')), label, key };
  }
}

/**
 * The two-int4 form of the advisory lock ('pets' in ASCII, 1), so it never meets the one-bigint
 * keys that creates and idempotency claims lock.
 */
const FIRST_RUN_LOCK = [0x70657473, 1];

/** 256 random bits, URL-safe; the prefix lets secret scanners recognise a leaked key. */
function newKey(): string {
  return `psk_${randomBytes(32).toString('base64url')}`;
}

function sha256(key: string): Buffer {
  return digest('sha256', key, 'buffer');
}

/** The key's SHA-256 in hex: Node hands a hex digest over faster than a Buffer (docs/performance.md). */
function callerId(key: string): string {
  return digest('sha256', key);
}
