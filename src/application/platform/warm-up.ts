/**
 * What the product must hold before the instance takes traffic (for the pets, a settled mark:
 * without one, every list would wait for a mark). The class is also the DI token.
 */
export abstract class WarmUp {
  abstract done(): boolean;
  /** Tries once more; rejects when it cannot be done now. */
  abstract run(): Promise<void>;
}
