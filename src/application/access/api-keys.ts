export type ApiKeyInfo = { id: number; label: string; createdAt: Date; revokedAt: Date | null };

/** A newly issued key: `key` exists only here, to be shown once. */
export type IssuedApiKey = { id: number; label: string; key: string };

export type RevokeResult = 'revoked' | 'already_revoked' | 'not_found';

/**
 * The keys the service accepts: stored ones (kept as SHA-256 hashes) and those of API_KEYS.
 * Implementations never let a lookup's time tell a guess how close it came, and never log a key
 * nor keep one that the environment does not already hold.
 */
export abstract class ApiKeys {
  /**
   * Who holds a valid key: a stable caller id (never the key itself), or null for a key that is
   * not valid. Rate limits and idempotency records are kept per caller.
   */
  abstract identify(key: string): Promise<string | null>;
  /**
   * The caller of a key known without asking the store (from the environment, or verified
   * recently), else null: a null here says nothing about the key.
   */
  abstract recognise(key: string): string | null;
  abstract issue(label: string): Promise<IssuedApiKey>;
  abstract list(): Promise<ApiKeyInfo[]>;
  abstract revoke(id: number): Promise<RevokeResult>;
  /** True when at least one key (from the environment or stored, not revoked) would be accepted. */
  abstract hasUsableKey(): Promise<boolean>;
  /**
   * Issues a key only when no key would be accepted, as one step: of several instances starting
   * at once on an empty store, exactly one gets the key and the others get null.
   */
  abstract issueIfNone(label: string): Promise<IssuedApiKey | null>;
}
