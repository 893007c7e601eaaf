import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { balancerServers, until } from '../support/cluster.js';

// deploy/haproxy.cfg alone, in front of a stand-in instance whose /readyz is slow, as it is on a
// busy machine. Found by the soak (npm run soak): 3 s into the load, with no fault injected, every
// instance was out at once and the clients got HAProxy's HTML 503.

const run = promisify(execFile);
const READYZ_MS = 800;
// Checks answered: each a slow /readyz the balancer must not count as failed.
let checks = 0;

let directory = '';
let balancerUrl = '';
let instance: Server;

function listen(server: Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      resolve(typeof address === 'object' && address !== null ? address.port : 0);
    }),
  );
}

beforeAll(async () => {
  try {
    execFileSync('haproxy', ['-v']);
  } catch {
    execFileSync('bash', ['-c', 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy']);
  }
  instance = createServer((request, response) => {
    const answer = () => response.writeHead(200, { 'Content-Type': 'application/json' }).end('[]');
    if (request.url === '/readyz') setTimeout(() => (answer(), checks++), READYZ_MS);
    else answer();
  });
  const instancePort = await listen(instance);
  const probe = createServer();
  const balancerPort = await listen(probe);
  await new Promise((resolve) => probe.close(resolve));

  directory = mkdtempSync(path.join(tmpdir(), 'balancer-'));
  const config = path.join(directory, 'haproxy.cfg');
  writeFileSync(config, `${readFileSync('deploy/haproxy.cfg', 'utf8')}    server app1 127.0.0.1:${instancePort}\n`);
  await run('haproxy', ['-D', '-f', config, '-p', path.join(directory, 'pid')], {
    env: { ...process.env, BALANCER_PORT: String(balancerPort), STATS_SOCKET: path.join(directory, 'sock') },
  });
  balancerUrl = `http://127.0.0.1:${balancerPort}`;
});

afterAll(async () => {
  const pid = Number(readFileSync(path.join(directory, 'pid'), 'utf8'));
  process.kill(pid, 'SIGTERM');
  await new Promise((resolve) => instance.close(resolve));
  rmSync(directory, { recursive: true, force: true });
});

describe('the balancer', () => {
  it('keeps an instance whose /readyz answers slower than the check interval', async () => {
    // Twice as many slow checks as `fall 2` needs to take the instance out.
    await until(() => Promise.resolve(checks >= 4), 30_000, '4 checks answered');
    expect((await balancerServers(path.join(directory, 'sock'))).get('app1')).toBe(true);

    const response = await fetch(`${balancerUrl}/v1/pets`);

    expect(response.status).toBe(200);
  });

  it('answers its own 503 with the Error body and Retry-After when no instance is up', async () => {
    instance.closeAllConnections();
    await new Promise((resolve) => instance.close(resolve));
    await until(
      async () => (await balancerServers(path.join(directory, 'sock'))).get('app1') === false,
      30_000,
      'app1 out of the balancer',
    );

    const response = await fetch(`${balancerUrl}/v1/pets`);

    expect(response.status).toBe(503);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(response.headers.get('retry-after')).toBe('1');
    expect(await response.json()).toEqual({
      code: 'unavailable',
      message: 'No instance of the service can take the request; retry later',
      status: 503,
    });
  });
});
