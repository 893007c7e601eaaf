import { SILENT_CONNECTION_MS } from '../../src/infrastructure/platform/database/database.js';
import { authorized, useService } from '../support/server.js';

// The service reaches PostgreSQL through a proxy the test controls. silence() makes every open
// connection silent while new ones still work: a failover, or lost NAT or firewall state.
const service = useService({ throughProxy: true });

type Answer = { status: number; sentAt: number; ms: number };

/** `clients` loops of back-to-back requests until `until()`; every answer, with when it was sent. */
async function traffic(path: string, clients: number, until: () => boolean): Promise<Answer[]> {
  const answers: Answer[] = [];
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (!until()) {
        const sentAt = performance.now();
        const response = await fetch(`${service.server.url}${path}`, {
          headers: authorized,
          signal: AbortSignal.timeout(30_000),
        });
        await response.arrayBuffer();
        answers.push({ status: response.status, sentAt, ms: performance.now() - sentAt });
      }
    }),
  );
  return answers;
}

describe('database connections that go silent', () => {
  it('cost a request a bounded time, and service recovers within 5 s under continuing traffic', async () => {
    let stop = false;
    const load = traffic('/v1/pets?limit=5', 12, () => stop);
    const readiness = traffic('/readyz', 1, () => stop);
    await new Promise((resolve) => setTimeout(resolve, 1000));

    const silencedAt = performance.now();
    service.proxy.silence();
    await new Promise((resolve) => setTimeout(resolve, 8000));
    stop = true;
    const answers = [...(await load), ...(await readiness)];

    const after = answers.filter((answer) => answer.sentAt >= silencedAt);
    const failures = after.filter((answer) => answer.status !== 200);
    const lastFailure = Math.max(0, ...failures.map((answer) => answer.sentAt + answer.ms - silencedAt));
    const slowest = Math.max(...after.map((answer) => answer.ms));
    const lastSecond = after.filter((answer) => answer.sentAt > silencedAt + 7000);
    console.log(
      `silent connections: ${after.length} requests in the 8 s after, ${failures.length} not 200 (${[...new Set(failures.map((f) => f.status))].join(', ') || 'none'}), ` +
        `the last answered ${Math.round(lastFailure)} ms after the silence; slowest answer ${Math.round(slowest)} ms`,
    );
    expect(failures.every((answer) => answer.status === 503)).toBe(true);
    expect(slowest).toBeLessThan(SILENT_CONNECTION_MS + 1000);
    expect(lastFailure).toBeLessThan(5000);
    expect(lastSecond.length).toBeGreaterThan(0);
    expect(lastSecond.every((answer) => answer.status === 200)).toBe(true);
  });
});
