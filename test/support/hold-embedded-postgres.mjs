// Plays "a service": runs the embedded PostgreSQL of <dataDir> in a process of its own, so a test
// can SIGKILL it (leaving postgres orphaned), keep it alive (holding the DATA_DIR), or run it as
// another OS user, or with TMPDIR of its own (Jest's process.env does not reach os.tmpdir()).
// <module> is a compiled copy of src/infrastructure/platform/database/embedded-postgres.ts; [options] is JSON.
// Prints one JSON line, {url} once started or {name, message} if the start failed; stops postgres
// and exits when its stdin ends.
import { pathToFileURL } from 'node:url';

const [modulePath, dataDir, options = '{}'] = process.argv.slice(2);
const stdinEnded = new Promise((resolve) => process.stdin.once('end', resolve));
process.stdin.resume();
const { startEmbeddedPostgres } = await import(pathToFileURL(modulePath).href);
try {
  const database = await startEmbeddedPostgres(dataDir, JSON.parse(options));
  process.stdout.write(`${JSON.stringify({ url: database.url })}\n`);
  await stdinEnded;
  await database.stop();
  process.exit(0);
} catch (error) {
  process.stdout.write(`${JSON.stringify({ name: error.name, message: error.message })}\n`);
  process.exit(1);
}
