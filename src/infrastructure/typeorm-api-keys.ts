import { hash as digest, randomBytes, timingSafeEqual } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { type ApiKeyInfo, ApiKeys, type IssuedApiKey, type RevokeResult } from '../application/api-keys.js';
import { translateStoreErrors } from './store-errors.js';

export type ApiKeyCacheOptions = {
  /** How long a verdict on a stored key is trusted without asking the database: the revocation bound. */
  seconds: number;
  /** Verdicts kept at most, so that a flood of random keys cannot grow memory. */
  maxEntries: number;
};

export const DEFAULT_API_KEY_CACHE: ApiKeyCacheOptions = { seconds: 5, maxEntries: 10_000 };

type Verdict = { valid: boolean; until: number };

/** Stored keys (SHA-256 hashes in `api_keys`) plus the keys of API_KEYS, held as hashes too. */
export class TypeOrmApiKeys extends ApiKeys {
  private readonly environmentHashes: Buffer[];
  private readonly verdicts = new Map<string, Verdict>();

  constructor(
    private readonly dataSource: DataSource,
    environmentKeys: string[],
    private readonly cache: ApiKeyCacheOptions = DEFAULT_API_KEY_CACHE,
  ) {
    super();
    this.environmentHashes = environmentKeys.map(sha256);
  }

  /** The caller id is the key's SHA-256 (hex): computed once here, used by the guard too. */
  async identify(key: string): Promise<string | null> {
    const hash = sha256(key);
    const id = hash.toString('hex');
    // Compare against every environment key without stopping early: the time says nothing about the key.
    let fromEnvironment = false;
    for (const candidate of this.environmentHashes) fromEnvironment = timingSafeEqual(hash, candidate) || fromEnvironment;
    if (fromEnvironment) return id;

    // The hot path: a key seen within the last `cache.seconds` costs no database round trip. The
    // map is keyed by the hash, so its lookup time says nothing about the key either.
    const cached = this.verdicts.get(id);
    if (cached !== undefined && cached.until > Date.now()) return cached.valid ? id : null;

    const rows: unknown[] = await translateStoreErrors(() =>
      this.dataSource.query('SELECT 1 FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL', [hash]),
    );
    this.remember(id, rows.length > 0);
    return rows.length > 0 ? id : null;
  }

  async issue(label: string): Promise<IssuedApiKey> {
    // 256 random bits, URL-safe; the prefix lets secret scanners recognise a leaked key.
    const key = `psk_${randomBytes(32).toString('base64url')}`;
    const rows: unknown[] = await translateStoreErrors(() =>
      this.dataSource.query('INSERT INTO api_keys (label, key_hash) VALUES ($1, $2) RETURNING id', [label, sha256(key)]),
    );
    return { id: idOf(rows[0]), label, key };
  }

  async list(): Promise<ApiKeyInfo[]> {
    const rows: unknown[] = await translateStoreErrors(() =>
      this.dataSource.query('SELECT id, label, created_at, revoked_at FROM api_keys ORDER BY id'),
    );
    return rows.map((row) => {
      if (!isRecord(row) || typeof row.label !== 'string' || !(row.created_at instanceof Date)) throw new Error('unexpected api_keys row');
      return { id: idOf(row), label: row.label, createdAt: row.created_at, revokedAt: row.revoked_at instanceof Date ? row.revoked_at : null };
    });
  }

  async revoke(id: number): Promise<RevokeResult> {
    const rows: unknown[] = await translateStoreErrors(() =>
      this.dataSource.query(
        `WITH target AS (SELECT id, revoked_at FROM api_keys WHERE id = $1 FOR UPDATE),
              revoked AS (UPDATE api_keys SET revoked_at = now() WHERE id IN (SELECT id FROM target WHERE revoked_at IS NULL) RETURNING id)
         SELECT (SELECT count(*) FROM target)::int AS found, (SELECT count(*) FROM revoked)::int AS revoked`,
        [id],
      ),
    );
    const [row] = rows;
    if (!isRecord(row) || row.found === 0) return 'not_found';
    // This instance forgets at once; the others within `cache.seconds`.
    this.verdicts.clear();
    return row.revoked === 1 ? 'revoked' : 'already_revoked';
  }

  async hasUsableKey(): Promise<boolean> {
    if (this.environmentHashes.length > 0) return true;
    const rows: unknown[] = await translateStoreErrors(() => this.dataSource.query('SELECT 1 FROM api_keys WHERE revoked_at IS NULL LIMIT 1'));
    return rows.length > 0;
  }

  private remember(id: string, valid: boolean): void {
    // Re-inserted, so that a key in use moves to the end and is not the first evicted.
    this.verdicts.delete(id);
    if (this.verdicts.size >= this.cache.maxEntries) {
      // Maps iterate in insertion order: drop the oldest verdict.
      const oldest = this.verdicts.keys().next();
      if (!oldest.done) this.verdicts.delete(oldest.value);
    }
    this.verdicts.set(id, { valid, until: Date.now() + this.cache.seconds * 1000 });
  }
}

/** crypto.hash, one call: createHash().update().digest() was ~2% of a request in the profile. */
function sha256(key: string): Buffer {
  return digest('sha256', key, 'buffer');
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/** bigint ids arrive as strings. */
function idOf(row: unknown): number {
  const id = isRecord(row) ? Number(row.id) : Number.NaN;
  if (!Number.isSafeInteger(id)) throw new Error('api_keys row without a usable id');
  return id;
}
