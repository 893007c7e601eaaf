import { createConnection, createServer, type Socket } from 'node:net';

export type StallingProxy = {
  url: string;
  /** Bytes carried from the server to clients so far: how a test sees that reads went this way. */
  bytesFromServer(): number;
  /** The server "stops answering": nothing more is carried either way, connections stay open. */
  stall(): void;
  resume(): void;
  close(): Promise<void>;
};

/**
 * A loopback TCP proxy in front of PostgreSQL that can go silent without closing anything, as a
 * stopped (SIGSTOP) or unreachable server does: the case that only timeouts can catch.
 */
export async function startStallingProxy(targetUrl: string): Promise<StallingProxy> {
  const target = new URL(targetUrl);
  const sockets = new Set<Socket>();
  let stalled = false;
  let fromServer = 0;
  const server = createServer((client) => {
    const upstream = createConnection({ host: target.hostname, port: Number(target.port || 5432) });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => (socket === client ? upstream : client).destroy());
    }
    upstream.on('data', (chunk: Buffer) => (fromServer += chunk.length));
    client.pipe(upstream).pipe(client);
    // After pipe(), which would resume them.
    if (stalled) for (const socket of [client, upstream]) socket.pause();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const url = new URL(targetUrl);
  url.hostname = '127.0.0.1';
  url.port = String(typeof address === 'object' && address !== null ? address.port : 0);
  return {
    url: url.toString(),
    bytesFromServer: () => fromServer,
    stall() {
      stalled = true;
      for (const socket of sockets) socket.pause();
    },
    resume() {
      stalled = false;
      for (const socket of sockets) socket.resume();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
