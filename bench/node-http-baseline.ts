/**
 * Standalone on purpose: it copies the service's SQL and error codes, so a change there does not move it.
 *
 * The floor: listPets, createPet and getPet on bare node:http + pg, no framework. Same auth, rules,
 * SQL, status codes, error bodies and headers as express-baseline.ts (both take them from
 * baseline-common.ts), routed and parsed by hand. Env: PORT, HOST, DATABASE_URL, API_KEYS, CURSOR_SECRET.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import querystring from 'node:querystring';
import {
  authenticate,
  BODY_LIMIT_BYTES,
  closePool,
  createPet,
  DEPRECATION_HEADERS,
  errorAnswer,
  getPet,
  HttpError,
  listPets,
  requireJsonBody,
} from './baseline-common.js';

const server = http.createServer((request, response) => void handle(request, response));
server.listen(Number(process.env.PORT ?? 3002), process.env.HOST ?? '127.0.0.1');
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => server.close(() => void closePool().finally(() => process.exit(0))));
}

async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
  response.setHeader('X-Content-Type-Options', 'nosniff');
  try {
    const [rawPath = '/', search = ''] = (request.url ?? '/').split('?', 2);
    // As Express routes: one trailing slash ignored, HEAD answered as GET (node:http drops the body).
    const path = rawPath.length > 1 ? rawPath.replace(/\/$/, '') : rawPath;
    const method = request.method === 'HEAD' ? 'GET' : request.method;
    if (path === '/healthz' && method === 'GET') return send(response, 200, { status: 'ok' });
    if (path === '/v1' || path.startsWith('/v1/')) response.setHeader('Cache-Control', 'no-store');

    if (path === '/v1/pets') {
      authenticate(request.headers.authorization);
      if (method === 'GET') {
        const page = await listPets(querystring.parse(search));
        if (page.link !== undefined) response.setHeader('Link', page.link);
        return send(response, 200, page.pets);
      }
      if (method === 'POST') {
        requireJsonBody(request.headers);
        const pet = await createPet(await readJson(request));
        response.setHeader('Location', `/v1/pets/${pet.id}`);
        return send(response, 201, pet);
      }
      throw new HttpError(405, 'Method not allowed on /v1/pets: use GET or POST', { Allow: 'GET, POST' });
    }
    const petId = /^\/v1\/pets\/([^/]+)$/.exec(path)?.[1];
    if (petId !== undefined) {
      if (method === 'GET')
        for (const [name, value] of Object.entries(DEPRECATION_HEADERS)) response.setHeader(name, value);
      authenticate(request.headers.authorization);
      if (method !== 'GET')
        throw new HttpError(405, 'Method not allowed on /v1/pets/{petId}: use GET', { Allow: 'GET' });
      return send(response, 200, await getPet(decodePathSegment(petId)));
    }
    throw new HttpError(404, 'No such route');
  } catch (error) {
    const answer = errorAnswer(error);
    for (const [name, value] of Object.entries(answer.headers)) response.setHeader(name, value);
    send(response, answer.status, answer.body);
  }
}

/** The whole body, parsed; one over the limit is read to the end (the connection stays usable) and refused. */
async function readJson(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size <= BODY_LIMIT_BYTES) chunks.push(chunk);
  }
  if (size > BODY_LIMIT_BYTES)
    throw new HttpError(413, `Request body exceeds the ${BODY_LIMIT_BYTES / 1024} KiB limit`);
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new HttpError(400, 'Request body is not valid JSON');
  }
}

function decodePathSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(400, 'petId is not a valid path segment');
  }
}

function send(response: ServerResponse, status: number, body: unknown): void {
  const json = JSON.stringify(body);
  response.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(json),
  });
  response.end(json);
}
