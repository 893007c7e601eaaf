/**
 * The two limits, by the names the RateLimit header fields give them: requests per API key, and
 * failed authentications per client address.
 */
export const RATE_LIMIT_POLICIES = ['per-key', 'failed-auth'] as const;
export type RateLimitPolicy = (typeof RATE_LIMIT_POLICIES)[number];

/** Where one limit's counter stands after a request: what a client is told of its budget. */
export type RateLimitState = {
  policy: RateLimitPolicy;
  /** Requests the window allows. */
  quota: number;
  windowSeconds: number;
  /** Requests left in the current window; 0 once refused. */
  remaining: number;
  /** Seconds until the window starts afresh (at least 1). */
  resetSeconds: number;
  /** This request is over the limit: it is refused until the window resets. */
  refused: boolean;
};

/**
 * Counts requests per API key and failed authentications per client address. Each method answers
 * null when rate limiting is off (RATE_LIMIT=off).
 */
export abstract class RateLimits {
  abstract hitKey(caller: string): Promise<RateLimitState | null>;
  abstract hitFailedAuthentication(address: string): Promise<RateLimitState | null>;
  /** Without counting: the refused state when the address is over its failed-authentication limit, else null. */
  abstract failedAuthenticationBlock(address: string): Promise<RateLimitState | null>;
  /**
   * Without counting or asking a shared store: the refused state when this instance has already
   * seen the address blocked (a block lasts to the end of its window), else null. Null says
   * nothing: failedAuthenticationBlock asks.
   */
  abstract knownFailedAuthenticationBlock(address: string): RateLimitState | null;
  /** Null when the counters work as configured, else what is degraded (they still count, per instance). */
  abstract degradation(): Promise<string | null>;
}
