import type { Request } from 'express';

/**
 * Who sent a request, as the failed-authentication limit and the refused-requests log count it:
 * `request.ip`, which with TRUSTED_PROXIES is the address a trusted proxy put in X-Forwarded-For.
 */
export function clientAddress(request: Request): string {
  return request.ip ?? request.socket.remoteAddress ?? 'unknown';
}
