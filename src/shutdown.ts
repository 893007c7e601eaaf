import type { Server } from 'node:http';
import type { INestApplication } from '@nestjs/common';
import { ShutdownState } from './interface/http/shutdown-state.js';

export type DrainResult = { drainedInMs: number; timedOut: boolean };

/**
 * Graceful stop: /readyz answers 503 and answers carry Connection: close; the server stops
 * accepting; requests in flight finish (idle keep-alive connections are closed as they become
 * idle), at most `timeoutMs`, after which the remaining connections are cut; then Nest closes.
 */
export async function drain(app: INestApplication, timeoutMs: number): Promise<DrainResult> {
  const started = Date.now();
  app.get(ShutdownState).draining = true;
  const server: Server = app.getHttpServer();
  const closed = new Promise<boolean>((resolve) => server.close(() => resolve(false)));
  const sweeper = setInterval(() => server.closeIdleConnections(), 50);
  let timer: NodeJS.Timeout | undefined;
  const timedOut = await Promise.race([closed, new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), timeoutMs)))]);
  clearInterval(sweeper);
  clearTimeout(timer);
  if (timedOut) server.closeAllConnections();
  await app.close();
  return { drainedInMs: Date.now() - started, timedOut };
}
