import { connect } from 'node:net';

export type RawExchange = { text: string; closed: boolean; ms: number };

/**
 * Sends raw bytes on a new connection and collects what comes back until the server closes the
 * connection or `waitMs` passes; `then` may send more once the first bytes arrived.
 */
export function rawExchange(
  url: string,
  request: string,
  options: { waitMs?: number; then?: (text: string) => string | null } = {},
): Promise<RawExchange> {
  const { port, hostname } = new URL(url);
  const started = performance.now();
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    let text = '';
    let followed = false;
    const finish = (closed: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, closed, ms: performance.now() - started });
    };
    const timer = setTimeout(() => finish(false), options.waitMs ?? 2000);
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      const more = followed ? null : (options.then?.(text) ?? null);
      if (more !== null) {
        followed = true;
        socket.write(more);
      }
    });
    socket.on('close', () => finish(true));
    socket.on('error', () => finish(true));
    socket.write(request);
  });
}
