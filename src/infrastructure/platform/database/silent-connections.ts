import { Socket } from 'node:net';
import pg from 'pg';

/**
 * pg's Client with its socket at hand: the socket is made here and handed to pg through the
 * Client's public `stream` option; a pool makes these when given `Client: WatchedClient`.
 */
export class WatchedClient extends pg.Client {
  readonly socket: Socket;

  constructor(config: pg.ClientConfig = {}) {
    const socket = new Socket();
    // The pool hides its password from enumeration (so not from a spread): passed on by name.
    super({ ...config, password: config.password, stream: () => socket });
    this.socket = socket;
  }
}

/**
 * Drops connections that have gone silent: open, but no longer carrying anything (a failover, or
 * lost NAT or firewall state; TCP would take about 15 minutes to notice).
 *
 * A connection lent out by the pool that carries nothing either way for `silenceMs` is destroyed,
 * so the query on it fails at once instead of the connection going back to the pool still busy
 * with a query that will never be answered (pg's own query_timeout does just that, and every later
 * query on it timed out in turn). Its siblings idle in the pool went silent with it: they are
 * destroyed too, so the pool opens fresh connections instead of lending out more dead ones.
 *
 * `silenceMs` must exceed the longest wait the server may impose on purpose (statement_timeout,
 * lock_timeout), so that a slow answer is never taken for silence. Only the pool's WatchedClients
 * are watched.
 */
export function dropSilentConnections(pool: pg.Pool, silenceMs: number, onDropped: (count: number) => void): void {
  const idle = new Set<pg.PoolClient>();
  const socketOf = (client: pg.PoolClient): Socket | null => (client instanceof WatchedClient ? client.socket : null);

  const dropSilent = (silent: pg.PoolClient): void => {
    const suspects = [silent, ...idle];
    idle.clear();
    for (const client of suspects) socketOf(client)?.destroy();
    onDropped(suspects.length);
  };

  const watched = new WeakSet<Socket>();
  pool.on('acquire', (client) => {
    idle.delete(client);
    const socket = socketOf(client);
    if (socket === null) return;
    if (!watched.has(socket)) {
      watched.add(socket);
      socket.on('timeout', () => dropSilent(client));
    }
    socket.setTimeout(silenceMs);
  });
  pool.on('release', (_error, client) => {
    socketOf(client)?.setTimeout(0);
    idle.add(client);
  });
  pool.on('remove', (client) => idle.delete(client));
}
