import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ShutdownState } from './shutdown-state.js';
import { isApiPath } from './api-prefix.js';

/**
 * Headers every answer of the API carries: never stored by caches (Cache-Control: no-store), and,
 * once the server stops accepting, `Connection: close` so that a client sends nothing more on it.
 */
export function answerHeaders(shutdown: ShutdownState) {
  return (request: IncomingMessage & { path: string }, response: ServerResponse, next: () => void): void => {
    if (isApiPath(request.path)) {
      response.setHeader('Cache-Control', 'no-store');
      // No validators are sent, so no conditional request can succeed; Express would still answer
      // `If-None-Match: *` with a 304.
      delete request.headers['if-none-match'];
      delete request.headers['if-modified-since'];
    }
    if (shutdown.closing) response.setHeader('Connection', 'close');
    next();
  };
}
