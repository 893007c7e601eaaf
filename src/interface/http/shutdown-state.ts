/** Set when the service is draining before it stops: /readyz answers 503, answers carry Connection: close. */
export class ShutdownState {
  draining = false;
}
