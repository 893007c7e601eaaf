/**
 * The stop after SIGTERM, in two steps: `draining`, /readyz answers 503 while requests are still
 * served as usual; then `closing`, every answer carries Connection: close.
 */
export class ShutdownState {
  draining = false;
  closing = false;
}
