import { createConnection, createServer, type Server, type Socket } from 'node:net';

export type TcpProxy = {
  /** The target URL rewritten to go through the proxy. */
  url: string;
  /** The database "goes away": open connections are cut and new ones refused. */
  cut(): Promise<void>;
  /** The database "comes back". */
  restore(): Promise<void>;
  /**
   * The open connections go silent, as after a failover or lost NAT state: still open, but nothing
   * passes either way. New connections work.
   */
  silence(): void;
  close(): Promise<void>;
};

/** A loopback TCP proxy in front of PostgreSQL, so tests can take the database away and bring it back. */
export async function startTcpProxy(targetUrl: string): Promise<TcpProxy> {
  const target = new URL(targetUrl);
  const sockets = new Set<Socket>();
  const pairs = new Set<[Socket, Socket]>();
  let server: Server | null = null;
  let port = 0;

  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server = createServer((client) => {
        const upstream = createConnection({ host: target.hostname, port: Number(target.port || 5432) });
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('close', () => sockets.delete(socket));
          socket.on('error', () => (socket === client ? upstream : client).destroy());
        }
        const pair: [Socket, Socket] = [client, upstream];
        pairs.add(pair);
        client.on('close', () => pairs.delete(pair));
        client.pipe(upstream).pipe(client);
      });
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        const address = server?.address();
        port = typeof address === 'object' && address !== null ? address.port : 0;
        resolve();
      });
    });

  const stop = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      if (server === null) return resolve();
      server.close(() => resolve());
      server = null;
    });

  await listen();
  const url = new URL(targetUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  const silence = () => {
    for (const [client, upstream] of pairs) {
      client.unpipe(upstream);
      upstream.unpipe(client);
      // Read and drop: the sockets stay open, and neither side hears anything more.
      for (const socket of [client, upstream]) socket.on('data', () => undefined);
    }
    pairs.clear();
  };
  return { url: url.toString(), cut: stop, restore: listen, silence, close: stop };
}
