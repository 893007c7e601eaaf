/** Resolves when the store answers; rejects with StoreUnavailableError when it does not. */
export abstract class Readiness {
  abstract check(): Promise<void>;
}
