/**
 * What the products must have done before the instance takes traffic (/readyz waits for it), bound
 * by the product that needs it, and what they do without while they serve. The class is also the DI
 * token.
 */
export abstract class WarmUp {
  abstract done(): boolean;
  /** Tries once more; rejects when it cannot be done now. */
  abstract run(): Promise<void>;
  /** Null while the products work as configured, else what they do without (/readyz's degraded list). */
  abstract degradation(): string | null;
}
