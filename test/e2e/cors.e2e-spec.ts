import { FlexibleRateLimits } from '../../src/infrastructure/platform/rate-limits/flexible-rate-limits.js';
import { openTestDatabase, type TestDatabase } from '../support/database.js';
import { authorized, startServer, type TestServer } from '../support/server.js';

const PAGE = 'https://shelter.example';
const OTHER = 'https://evil.example';

let database: TestDatabase;
let server: TestServer;
let corsOff: TestServer;

beforeAll(async () => {
  database = await openTestDatabase();
  // One wrong key a minute per address: anything counted as a failure would show at once.
  const rateLimits = new FlexibleRateLimits({ perKeyPerMinute: 100, failedAuthenticationsPerMinute: 1 }, null);
  server = await startServer(database, { rateLimits, corsOrigins: `${PAGE}, http://localhost:8080` });
  corsOff = await startServer(database);
});
afterAll(async () => {
  await server?.close();
  await corsOff?.close();
  await database?.close();
});

function preflight(target: TestServer, path: string, origin: string, method = 'POST'): Promise<Response> {
  return fetch(`${target.url}${path}`, {
    method: 'OPTIONS',
    headers: {
      Origin: origin,
      'Access-Control-Request-Method': method,
      'Access-Control-Request-Headers': 'authorization,content-type,idempotency-key,x-request-id',
    },
  });
}

function corsHeaders(response: Response): string[] {
  return [...response.headers.keys()].filter((name) => name.startsWith('access-control-'));
}

function list(value: string | null): string[] {
  return (value ?? '').split(',').map((item) => item.trim().toLowerCase());
}

describe('CORS with CORS_ORIGINS', () => {
  it('answers a preflight from a listed origin without a key: the methods of the path and the request headers', async () => {
    const pets = await preflight(server, '/v1/pets', PAGE);
    const pet = await preflight(server, '/v1/pets/1', PAGE, 'GET');

    expect(pets.status).toBe(204);
    expect(pets.headers.get('access-control-allow-origin')).toBe(PAGE);
    expect(list(pets.headers.get('access-control-allow-methods')).sort()).toEqual(['get', 'head', 'post']);
    expect(list(pets.headers.get('access-control-allow-headers')).sort()).toEqual([
      'authorization',
      'content-type',
      'idempotency-key',
      'x-request-id',
    ]);
    expect(Number(pets.headers.get('access-control-max-age'))).toBeGreaterThan(0);
    expect(pets.headers.get('access-control-allow-credentials')).toBeNull();
    expect(pet.status).toBe(204);
    expect(list(pet.headers.get('access-control-allow-methods')).sort()).toEqual(['get', 'head']);
  });

  it('counts preflights toward no limit', async () => {
    for (let i = 0; i < 5; i++) expect((await preflight(server, '/v1/pets', PAGE)).status).toBe(204);

    // The one wrong key allowed a minute is still there.
    expect((await fetch(`${server.url}/v1/pets`, { headers: { Authorization: 'Bearer wrong-0' } })).status).toBe(401);
  });

  it('lets the listed origin read the answer and the headers it needs', async () => {
    const response = await fetch(`${server.url}/v1/pets`, { headers: { ...authorized, Origin: PAGE } });

    expect(response.status).toBe(200);
    expect(response.headers.get('access-control-allow-origin')).toBe(PAGE);
    expect(list(response.headers.get('vary'))).toContain('origin');
    expect(list(response.headers.get('access-control-expose-headers')).sort()).toEqual(
      [
        'Deprecation',
        'Idempotent-Replayed',
        'Link',
        'Location',
        'RateLimit',
        'RateLimit-Policy',
        'Retry-After',
        'Sunset',
        'X-Request-Id',
      ]
        .map((name) => name.toLowerCase())
        .sort(),
    );
  });

  it('matches origins exactly: each listed one, and nothing that merely looks like it', async () => {
    const local = await preflight(server, '/v1/pets', 'http://localhost:8080');
    const lookalikes = await Promise.all(
      ['https://shelter.example:443', 'http://shelter.example', 'https://shelter.example.evil', 'null'].map((origin) =>
        preflight(server, '/v1/pets', origin),
      ),
    );

    expect(local.headers.get('access-control-allow-origin')).toBe('http://localhost:8080');
    for (const response of lookalikes) expect(corsHeaders(response)).toEqual([]);
  });

  it('gives any other origin no CORS header, on a preflight or an answer', async () => {
    const refusedPreflight = await preflight(server, '/v1/pets', OTHER);
    const answer = await fetch(`${server.url}/v1/pets`, { headers: { ...authorized, Origin: OTHER } });

    expect(corsHeaders(refusedPreflight)).toEqual([]);
    expect(refusedPreflight.status).not.toBe(204);
    expect(answer.status).toBe(200);
    expect(corsHeaders(answer)).toEqual([]);
  });
});

describe('CORS without CORS_ORIGINS', () => {
  it('is off: no origin gets a CORS header', async () => {
    const refusedPreflight = await preflight(corsOff, '/v1/pets', PAGE);
    const answer = await fetch(`${corsOff.url}/v1/pets`, { headers: { ...authorized, Origin: PAGE } });

    expect(corsHeaders(refusedPreflight)).toEqual([]);
    expect(answer.status).toBe(200);
    expect(corsHeaders(answer)).toEqual([]);
  });
});
