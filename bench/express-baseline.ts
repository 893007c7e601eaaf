/**
 * The yardstick: listPets, createPet and getPet in plain Express 5 + pg, with the service's auth,
 * validation (the same domain rule functions), SQL (the repository's statements), error bodies,
 * contract headers (nosniff, no-store, no ETag, Sunset/Deprecation) and keyset paging, and no
 * framework layers. What it does not have: the service's request log line, metrics and request
 * id. Env: PORT, HOST, DATABASE_URL, API_KEYS, CURSOR_SECRET, BASELINE_PREBUILT_PROTOTYPES.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import pg from 'pg';
import { PAGE_LIMIT } from '../src/application/list-pets.js';
import { categoryIdProblems, MAX_PET_ID, nameProblems, type Pet, statusProblems } from '../src/domain/pet.js';
import { isPetStatus, type PetStatus } from '../src/domain/pet-status.js';
import { INSERT, PAGE, PAGE_WITH_STATUS } from '../src/infrastructure/typeorm-pet-repository.js';
import { prebuiltPrototypes } from '../src/interface/http/express-prototypes.js';

const pool = new pg.Pool({
  connectionString: process.env.DATABASE_URL,
  max: 10,
  connectionTimeoutMillis: 3000,
  statement_timeout: 10_000,
  query_timeout: 12_000,
});
const keyHashes = (process.env.API_KEYS ?? '').split(',').filter((key) => key.trim() !== '').map((key) => sha256(key.trim()));
const cursorSecret = process.env.CURSOR_SECRET ?? 'baseline';
const REALM = 'Bearer realm="petstore"';
const NEW_PET_FIELDS = new Set(['name', 'categoryId', 'status']);
const CODES: Record<number, string> = {
  400: 'invalid_request',
  401: 'unauthorized',
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  500: 'internal_error',
  503: 'unavailable',
};

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

type PetRow = { id: string; name: string; category_id: string; status: PetStatus };

const app = express();
app.disable('x-powered-by');
app.set('etag', false); // as the service: answers are no-store, a validator would only invite 304s
app.use((_request, response, next) => {
  response.setHeader('X-Content-Type-Options', 'nosniff');
  next();
});
app.use('/v1', (_request, response, next) => {
  response.setHeader('Cache-Control', 'no-store');
  next();
});
app.get('/healthz', (_request, response) => void response.json({ status: 'ok' }));
app.get('/v1/pets', authenticate, listPets);
// Parsed after authentication, as in the service: a caller without a key learns nothing about its body.
app.post('/v1/pets', authenticate, requireJsonBody, express.json({ limit: 16 * 1024, strict: false, type: () => true }), createPet);
app.get('/v1/pets/:petId', announceDeprecation, authenticate, getPet);
app.all('/v1/pets', authenticate, () => {
  throw new HttpError(405, 'Method not allowed on /v1/pets: use GET or POST', { Allow: 'GET, POST' });
});
app.all('/v1/pets/:petId', authenticate, () => {
  throw new HttpError(405, 'Method not allowed on /v1/pets/{petId}: use GET', { Allow: 'GET' });
});
app.use(() => {
  throw new HttpError(404, 'No such route');
});
app.use(answerWithError);

// Stock Express, as anyone would write it. BASELINE_PREBUILT_PROTOTYPES=1 gives it the service's
// server change (PetStoreExpressAdapter), to show what is left of the difference without it.
const serverOptions = process.env.BASELINE_PREBUILT_PROTOTYPES === '1' ? prebuiltPrototypes(app) : {};
const server = http.createServer(serverOptions, app).listen(Number(process.env.PORT ?? 3001), process.env.HOST ?? '127.0.0.1');
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => server.close(() => void pool.end().finally(() => process.exit(0))));
}

function authenticate(request: Request, _response: Response, next: NextFunction): void {
  const key = /^Bearer +(\S+) *$/i.exec(request.headers.authorization ?? '')?.[1];
  if (key === undefined) throw new HttpError(401, 'Missing API key: send Authorization: Bearer <key>', { 'WWW-Authenticate': REALM });
  const presented = sha256(key);
  let found = false;
  for (const hash of keyHashes) found = timingSafeEqual(presented, hash) || found;
  if (!found) throw new HttpError(401, 'Invalid API key', { 'WWW-Authenticate': `${REALM}, error="invalid_token"` });
  next();
}

function requireJsonBody(request: Request, _response: Response, next: NextFunction): void {
  const type = request.headers['content-type'];
  const hasBody = request.headers['transfer-encoding'] !== undefined || (request.headers['content-length'] ?? '0') !== '0';
  if (type === undefined ? hasBody : !/^application\/json\s*(;|$)/i.test(type)) throw new HttpError(415, 'Content-Type must be application/json');
  if (!hasBody) throw new HttpError(400, 'Request body must be a JSON object');
  next();
}

function announceDeprecation(_request: Request, response: Response, next: NextFunction): void {
  response.setHeader('Sunset', 'Thu, 05 Dec 2030 00:00:00 GMT');
  response.setHeader('Deprecation', '@1795219200');
  next();
}

async function listPets(request: Request, response: Response): Promise<void> {
  const { limit: limitText, status: statusText, cursor } = request.query;
  const problems = [
    ...(limitText === undefined ? [] : limitProblems(limitText)),
    ...(statusText === undefined ? [] : statusProblems(statusText)),
    ...(cursor === undefined || typeof cursor === 'string' ? [] : ['cursor must be a string']),
  ];
  if (problems.length > 0) throw new HttpError(400, `Invalid query: ${problems.join('; ')}`);
  const limit = typeof limitText === 'string' ? Number(limitText) : PAGE_LIMIT.default;
  const status = isPetStatus(statusText) ? statusText : undefined;
  const afterId = typeof cursor === 'string' ? decodeCursor(cursor, status) : undefined;

  // One row more than the page tells whether another page follows.
  const { rows } = status
    ? await pool.query<PetRow>(PAGE_WITH_STATUS, [status, afterId ?? 0, limit + 1])
    : await pool.query<PetRow>(PAGE, [afterId ?? 0, limit + 1]);
  const pets = rows.slice(0, limit).map(toPet);
  const last = pets.at(-1);
  if (rows.length > limit && last) {
    const next = new URLSearchParams({ limit: String(limit), ...(status ? { status } : {}), cursor: encodeCursor(last.id, status) });
    response.setHeader('Link', `</v1/pets?${next}>; rel="next"`);
  }
  response.json(pets);
}

async function createPet(request: Request, response: Response): Promise<void> {
  const body: unknown = request.body;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new HttpError(400, 'Request body must be a JSON object');
  const fields = new Map<string, unknown>(Object.entries(body));
  const status = fields.get('status');
  const problems = [
    ...[...fields.keys()].filter((field) => !NEW_PET_FIELDS.has(field)).map((field) => `${field} is not a known field`),
    ...nameProblems(fields.get('name')),
    ...categoryIdProblems(fields.get('categoryId')),
    ...(status === undefined ? [] : statusProblems(status)),
  ];
  const name = fields.get('name');
  const categoryId = fields.get('categoryId');
  if (problems.length > 0 || typeof name !== 'string' || typeof categoryId !== 'number') {
    throw new HttpError(400, `Invalid request body: ${problems.join('; ')}`);
  }
  const pet = { name, categoryId, status: isPetStatus(status) ? status : 'available' };
  const { rows } = await pool.query<PetRow>(INSERT, [pet.name, pet.categoryId, pet.status]);
  const row = rows[0];
  if (row === undefined) throw new Error('INSERT INTO pets returned no row');
  const created = toPet(row);
  response.status(201).location(`/v1/pets/${created.id}`).json(created);
}

async function getPet(request: Request, response: Response): Promise<void> {
  const petId = String(request.params.petId);
  const id = /^\d{1,16}$/.test(petId) ? Number(petId) : 0;
  if (id < 1 || id > MAX_PET_ID) throw new HttpError(404, `Pet ${petId.slice(0, 40)} does not exist`);
  const { rows } = await pool.query<PetRow>('SELECT id, name, category_id, status FROM pets WHERE id = $1', [id]);
  const row = rows[0];
  if (row === undefined) throw new HttpError(404, `Pet ${id} does not exist`);
  response.json(toPet(row));
}

function limitProblems(value: unknown): string[] {
  const ok = typeof value === 'string' && /^\d{1,3}$/.test(value) && Number(value) >= PAGE_LIMIT.min && Number(value) <= PAGE_LIMIT.max;
  return ok ? [] : [`limit must be an integer from ${PAGE_LIMIT.min} to ${PAGE_LIMIT.max}`];
}

function toPet(row: PetRow): Pet {
  return { id: Number(row.id), name: row.name, categoryId: Number(row.category_id), status: row.status };
}

/** Same idea as the service's cursor: last id and status filter, HMAC-signed. */
function encodeCursor(afterId: number, status: PetStatus | undefined): string {
  const payload = `${afterId}.${status ?? ''}`;
  return `${Buffer.from(payload).toString('base64url')}.${sign(payload).toString('base64url')}`;
}

function decodeCursor(cursor: string, status: PetStatus | undefined): number {
  const [encodedPayload = '', encodedSignature = ''] = cursor.split('.');
  const payload = Buffer.from(encodedPayload, 'base64url').toString();
  const signature = Buffer.from(encodedSignature, 'base64url');
  const expected = sign(payload);
  if (signature.length !== expected.length || !timingSafeEqual(signature, expected)) throw new HttpError(400, 'cursor is not one this service issued');
  const [afterId = '', cursorStatus = ''] = payload.split('.');
  if (cursorStatus !== (status ?? '')) throw new HttpError(400, 'cursor was issued for another status filter');
  return Number(afterId);
}

function sign(payload: string): Buffer {
  return createHmac('sha256', cursorSecret).update(payload).digest().subarray(0, 16);
}

function sha256(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/** Every failure as {code, message, status}: ours, body-parser's (413, 415, 400), pg's (503) or a bug (500). */
function answerWithError(error: unknown, _request: Request, response: Response, _next: NextFunction): void {
  const failure = error instanceof HttpError ? error : fromLibrary(error);
  if (failure.status >= 500) console.error(error);
  response
    .status(failure.status)
    .set(failure.headers)
    .json({ code: CODES[failure.status] ?? 'invalid_request', message: failure.message, status: failure.status });
}

function fromLibrary(error: unknown): HttpError {
  const status = typeof error === 'object' && error !== null && 'status' in error && typeof error.status === 'number' ? error.status : 500;
  const code = typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : '';
  if (status === 413) return new HttpError(413, 'Request body exceeds the 16 KiB limit');
  if (status === 415) return new HttpError(415, 'Content-Type must be application/json');
  if (status >= 400 && status < 500) return new HttpError(status, 'Request body is not valid JSON');
  // Connection exceptions, shutdown, socket errors: the database is not answering.
  if (/^(08|57P0)|^E[A-Z]/.test(code)) return new HttpError(503, 'The service cannot reach its database; retry later', { 'Retry-After': '5' });
  return new HttpError(500, 'Internal server error');
}
