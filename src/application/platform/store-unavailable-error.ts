/**
 * The store did not answer (connection refused, timed out, shutting down). Part of every store
 * port's contract: adapters translate driver errors into it, and the error filter answers 503.
 */
export class StoreUnavailableError extends Error {
  constructor(options?: { cause?: unknown }) {
    super('The pet store is temporarily unavailable', options);
    this.name = 'StoreUnavailableError';
  }
}
