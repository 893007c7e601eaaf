/**
 * Counts requests per API key and failed authentications per client address. Each method
 * answers null when the request may go on, else the seconds to wait.
 */
export abstract class RateLimits {
  abstract hitKey(caller: string): Promise<number | null>;
  abstract hitFailedAuthentication(address: string): Promise<number | null>;
  /** Whether the address is over its failed-authentication limit, without counting: null or the seconds to wait. */
  abstract failedAuthenticationBlock(address: string): Promise<number | null>;
  /** Null when the counters work as configured, else what is degraded (they still count, per instance). */
  abstract degradation(): Promise<string | null>;
}
