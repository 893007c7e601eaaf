import { createConnection, createServer, type Socket } from 'node:net';

export type StallingProxy = {
  url: string;
  /** Bytes carried from the server to clients so far: how a test sees that reads went this way. */
  bytesFromServer(): number;
  /** The server "stops answering": nothing more is carried either way, connections stay open. */
  stall(): void;
  resume(): void;
  /** The server's answers are held (queries still reach it): a read is in flight until cut or resumed. */
  holdAnswers(): void;
  /** Bytes carried from clients to the server so far: how a test sees that a query was sent. */
  bytesFromClient(): number;
  /**
   * The open connections are cut, as a balancer cuts its sessions to a server it takes out; new
   * connections are carried as before.
   */
  cutConnections(): void;
  /** New connections are closed as soon as they open (a server that is gone); open ones are left. */
  refuse(): void;
  /** How many connections were closed so. */
  refused(): number;
  accept(): void;
  close(): Promise<void>;
};

/**
 * A loopback TCP proxy in front of PostgreSQL that can go silent without closing anything, as a
 * stopped (SIGSTOP) or unreachable server does: the case that only timeouts can catch.
 */
export async function startStallingProxy(targetUrl: string): Promise<StallingProxy> {
  const target = new URL(targetUrl);
  const sockets = new Set<Socket>();
  const upstreams = new Set<Socket>();
  let stalled = false;
  let fromServer = 0;
  let fromClient = 0;
  let refusing = false;
  let refusedCount = 0;
  const server = createServer((client) => {
    if (refusing) {
      refusedCount++;
      client.destroy();
      return;
    }
    const upstream = createConnection({ host: target.hostname, port: Number(target.port || 5432) });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => (socket === client ? upstream : client).destroy());
    }
    upstreams.add(upstream);
    upstream.on('close', () => upstreams.delete(upstream));
    upstream.on('data', (chunk: Buffer) => (fromServer += chunk.length));
    client.on('data', (chunk: Buffer) => (fromClient += chunk.length));
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
    holdAnswers() {
      for (const upstream of upstreams) upstream.pause();
    },
    bytesFromClient: () => fromClient,
    cutConnections() {
      for (const socket of sockets) socket.destroy();
    },
    refuse() {
      refusing = true;
    },
    refused: () => refusedCount,
    accept() {
      refusing = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
