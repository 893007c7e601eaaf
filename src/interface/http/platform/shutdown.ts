import type { Server } from 'node:http';
import { Server as NetServer } from 'node:net';
import type { INestApplication } from '@nestjs/common';
import { ShutdownState } from './shutdown-state.js';
import pTimeout from 'p-timeout';

export type DrainResult = { drainedInMs: number; timedOut: boolean };

/**
 * Graceful stop. For `delayMs`, the service keeps serving as usual while /readyz answers 503, so
 * that a load balancer takes the instance out. Then it stops accepting connections, and every
 * answer carries Connection: close; requests in flight finish (at most `timeoutMs`, after which
 * the remaining connections are cut), and Nest closes.
 */
export async function drain(
  app: INestApplication<Server>,
  { delayMs, timeoutMs }: { delayMs: number; timeoutMs: number },
): Promise<DrainResult> {
  const started = Date.now();
  const state = app.get(ShutdownState);
  state.draining = true;
  if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
  state.closing = true;
  const server = app.getHttpServer();
  // net.Server's close, not http.Server's: that one also closes idle keep-alive connections at
  // once, and a client may be writing its next request on one of them just then (it would get
  // a reset). Left open, each gets Connection: close on its next answer, or ends at keepAliveTimeout.
  const closed = new Promise<boolean>((resolve) => NetServer.prototype.close.call(server, () => resolve(false)));
  const timedOut = await pTimeout(closed, { milliseconds: timeoutMs, fallback: () => true });
  if (timedOut) server.closeAllConnections();
  await app.close();
  return { drainedInMs: Date.now() - started, timedOut };
}
