// One pausable TCP proxy per instance between the instance and the PostgreSQL primary, in a
// process of its own (forked by soak.mjs) so that the load generator's busy event loop never
// slows the database path. The primary's port is read from .cluster/env at each new connection:
// the proxies listen before `cluster.sh up` has chosen it.
//
// IPC: { silence: i } makes instance i's open connections silent (nothing passes either way, the
// sockets stay open), as after a failover or lost NAT state; new connections work at once.
// Silent pairs are destroyed after SILENT_KEEP_MS so that PostgreSQL's backends end too.
// Answers { silenced: i, connections: n }.
import { readFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import path from 'node:path';

const SILENT_KEEP_MS = 30_000;
const envFile = path.resolve(import.meta.dirname, '../../.cluster/env');
const count = Number(process.argv[2] ?? '3');

function primaryPort() {
  const match = /^PRIMARY_PORT=(\d+)$/m.exec(readFileSync(envFile, 'utf8'));
  if (match === null) throw new Error(`${envFile} has no PRIMARY_PORT`);
  return Number(match[1]);
}

const proxies = [];
for (let i = 1; i <= count; i++) {
  const pairs = new Set();
  const server = createServer((client) => {
    let upstream;
    try {
      upstream = createConnection({ host: '127.0.0.1', port: primaryPort() });
    } catch {
      client.destroy();
      return;
    }
    const pair = [client, upstream];
    pairs.add(pair);
    for (const socket of pair) {
      socket.on('error', () => undefined);
      socket.on('close', () => {
        pairs.delete(pair);
        for (const other of pair) other.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxies.push({ port: server.address().port, pairs });
}

function silence(i) {
  const proxy = proxies[i - 1];
  const silenced = [...proxy.pairs];
  proxy.pairs.clear();
  for (const [client, upstream] of silenced) {
    client.unpipe(upstream);
    upstream.unpipe(client);
    // Read and drop: the sockets stay open and neither side hears anything more.
    for (const socket of [client, upstream]) {
      socket.removeAllListeners('close');
      socket.on('data', () => undefined);
    }
  }
  setTimeout(() => {
    for (const pair of silenced) for (const socket of pair) socket.destroy();
  }, SILENT_KEEP_MS).unref();
  return silenced.length;
}

process.on('message', (message) => {
  if (typeof message?.silence === 'number') {
    process.send({ silenced: message.silence, connections: silence(message.silence) });
  }
});
process.on('disconnect', () => process.exit(0));
process.send({ ports: proxies.map((proxy) => proxy.port) });
