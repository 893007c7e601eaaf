import { Socket } from 'node:net';
import pg from 'pg';
import { sessionOptions } from './database.js';

/**
 * Runs one statement on a connection of its own, outside any pool: a pool whose connections hang
 * would hang the probe too. Every wait is bounded by `timeoutMs`, and the connection is closed by
 * destroying its socket, since a server that stopped answering would never acknowledge end().
 */
export async function queryOnce<Row extends object>(url: string, sql: string, timeoutMs: number): Promise<Row[]> {
  // Made here and handed to pg through its `stream` option, so that it can be destroyed.
  const socket = new Socket();
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: timeoutMs,
    query_timeout: timeoutMs,
    // As the pools' connections: a serializable default would fail the probe on a standby.
    options: sessionOptions(),
    stream: () => socket,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const { rows } = await client.query<Row>(sql);
    return rows;
  } finally {
    // Terminate is written at once; the server need not answer it.
    client.end().catch(() => undefined);
    socket.destroy();
  }
}
