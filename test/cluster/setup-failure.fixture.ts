import { createServer } from 'node:http';
import { abortedAfter, carefulLoad, until, watchInstances } from '../support/cluster.js';

// Not a test of the cluster project (it matches no testMatch): setup-failure.cluster-spec.ts runs it
// in a Jest of its own. A describe set up as the failover test's are, with the same load and watch,
// whose beforeAll fails after both have started, as it did when the switchover's wait for a new
// leader timed out. A server on 127.0.0.1 stands in for the balancer and the instances.

let nextId = 1;
const server = createServer((request, response) => {
  request.resume();
  const json = (status: number, body: unknown): void => {
    response.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
  };
  if (request.method === 'POST') json(201, { id: nextId++ });
  else if (request.url?.startsWith('/v1/pets')) json(200, []);
  else if (request.url === '/metrics') response.end('db_up 1\n');
  else json(200, { status: 'ok' });
});
let port = 0;

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  port = typeof address === 'object' && address !== null ? address.port : 0;
});

// After the describe's own afterAll: the server closes once the load has ended.
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('a set-up that fails once its load and watch run', () => {
  const started = abortedAfter(afterAll);

  beforeAll(async () => {
    const running = started(carefulLoad({ balancerUrl: `http://127.0.0.1:${port}`, apiKey: 'psk_fixture' }, 'fixture'));
    await until(() => Promise.resolve(running.observed.acks.length >= 50), 10_000, '50 creates acknowledged');
    started(watchInstances([port]));
    await until(() => Promise.resolve(false), 500, 'the state this set-up waits for on purpose');
  });

  it('is never reached', () => {
    expect(true).toBe(true);
  });
});
