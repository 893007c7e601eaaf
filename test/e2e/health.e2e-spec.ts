import { authorized, json, useService } from '../support/server.js';

// The service reaches PostgreSQL through a proxy the test controls, so the database can "go away".
const service = useService({ throughProxy: true });

describe('health', () => {
  it('GET /healthz answers 200 while the process is up', async () => {
    const response = await fetch(`${service.server.url}/healthz`);

    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok' });
  });

  it('GET /readyz answers 200 when the database answers', async () => {
    expect((await fetch(`${service.server.url}/readyz`)).status).toBe(200);
  });

  it('answers 503 unavailable with Retry-After while the database is away, and recovers by itself', async () => {
    await service.proxy.cut();
    try {
      for (const [path, init] of [
        ['/readyz', {}],
        ['/v1/pets', { headers: authorized }],
        ['/v1/pets', { method: 'POST', headers: json, body: JSON.stringify({ name: 'Rex', categoryId: 1 }) }],
        ['/v1/pets/1', { headers: authorized }],
      ] as const) {
        const response = await fetch(`${service.server.url}${path}`, init);

        expect(response.status).toBe(503);
        expect(response.headers.get('retry-after')).toBe('5');
        expect(await response.json()).toEqual({
          code: 'unavailable',
          message: expect.stringContaining('database'),
          status: 503,
        });
      }
      expect((await fetch(`${service.server.url}/healthz`)).status).toBe(200);
    } finally {
      await service.proxy.restore();
    }

    expect((await fetch(`${service.server.url}/readyz`)).status).toBe(200);
    expect((await fetch(`${service.server.url}/v1/pets`, { headers: authorized })).status).toBe(200);
  });
});
