/**
 * Standalone on purpose: it copies the service's SQL and error codes, so a change there does not move it.
 *
 * What the baselines (express-baseline.ts, node-http-baseline.ts, nest-baseline.ts) share below
 * HTTP: the service's auth (a Bearer key from API_KEYS, compared as sha256), its rules (the
 * domain's own check functions), the statements its repository runs, written out, a signed keyset
 * cursor and the {code, message, status} error body. Env: DATABASE_URL, API_KEYS, CURSOR_SECRET.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import pg from 'pg';
import { PAGE_LIMIT } from '../src/application/pets/list-pets.js';
import { categoryIdProblems, MAX_PET_ID, nameProblems, type Pet, statusProblems } from '../src/domain/pets/pet.js';
import { isPetStatus, type PetStatus } from '../src/domain/pets/pet.js';

export const BODY_LIMIT_BYTES = 16 * 1024;
export const DEPRECATION_HEADERS = { Sunset: 'Thu, 05 Dec 2030 00:00:00 GMT', Deprecation: '@1795219200' };

const pool = new pg.Pool({
  connectionString: process.env.DATABASE_URL,
  max: 10,
  connectionTimeoutMillis: 3000,
  statement_timeout: 10_000,
  query_timeout: 12_000,
});
const keyHashes = (process.env.API_KEYS ?? '')
  .split(',')
  .filter((key) => key.trim() !== '')
  .map((key) => sha256(key.trim()));
const cursorSecret = process.env.CURSOR_SECRET ?? 'baseline';
const REALM = 'Bearer realm="petstore"';
const NEW_PET_FIELDS = new Set(['name', 'categoryId', 'status']);
const COLUMNS = 'id, name, category_id, status';
// The contract says a client paging to the end never misses a pet; with no high-water marks here,
// creates commit in id order, one at a time under an exclusive lock (see docs/performance.md), on a
// key of their own ('pets' in ASCII, 3) and their own table (bench/database.ts, baselineUrl()).
const INSERT = `WITH serial AS MATERIALIZED (SELECT pg_advisory_xact_lock(1885697139, 3))
  INSERT INTO pets (name, category_id, status) SELECT $1::text, $2::bigint, $3::text FROM serial RETURNING ${COLUMNS}`;
const BY_ID = `SELECT ${COLUMNS} FROM pets WHERE id = $1`;
// Keyset paging, as the service pages: the (status, id) index or the primary key, never OFFSET.
const PAGE = `SELECT ${COLUMNS} FROM pets WHERE id > $1 ORDER BY id LIMIT $2`;
const PAGE_WITH_STATUS = `SELECT ${COLUMNS} FROM pets WHERE status = $1 AND id > $2 ORDER BY id LIMIT $3`;
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

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

type PetRow = { id: string; name: string; category_id: string; status: PetStatus };

/** Throws a 401 unless `authorization` carries one of API_KEYS. */
export function authenticate(authorization: string | undefined): void {
  const key = /^Bearer +(\S+) *$/i.exec(authorization ?? '')?.[1];
  if (key === undefined)
    throw new HttpError(401, 'Missing API key: send Authorization: Bearer <key>', { 'WWW-Authenticate': REALM });
  const presented = sha256(key);
  let found = false;
  for (const hash of keyHashes) found = timingSafeEqual(presented, hash) || found;
  if (!found) throw new HttpError(401, 'Invalid API key', { 'WWW-Authenticate': `${REALM}, error="invalid_token"` });
}

/** 415 unless the body is declared JSON, 400 when there is none. */
export function requireJsonBody(headers: IncomingHttpHeaders): void {
  const type = headers['content-type'];
  const hasBody = headers['transfer-encoding'] !== undefined || (headers['content-length'] ?? '0') !== '0';
  if (type === undefined ? hasBody : !/^application\/json\s*(;|$)/i.test(type))
    throw new HttpError(415, 'Content-Type must be application/json');
  if (!hasBody) throw new HttpError(400, 'Request body must be a JSON object');
}

/** A page in id order, and the Link header value when another page follows. */
export async function listPets(query: Record<string, unknown>): Promise<{ pets: Pet[]; link?: string }> {
  const { limit: limitText, status: statusText, cursor } = query;
  const problems = [
    ...(limitText === undefined ? [] : limitProblems(limitText)),
    ...(statusText === undefined ? [] : statusProblems(statusText)),
    ...(cursor === undefined || typeof cursor === 'string' ? [] : ['cursor must be a string']),
  ];
  if (problems.length > 0) throw new HttpError(400, `Invalid query: ${problems.join('; ')}`);
  const limit = typeof limitText === 'string' ? Number(limitText) : PAGE_LIMIT.default;
  const status = isPetStatus(statusText) ? statusText : undefined;
  const afterId = typeof cursor === 'string' ? decodeCursor(cursor, status) : 0;

  // One row more than the page tells whether another page follows.
  const { rows } = status
    ? await pool.query<PetRow>(PAGE_WITH_STATUS, [status, afterId, limit + 1])
    : await pool.query<PetRow>(PAGE, [afterId, limit + 1]);
  const pets = rows.slice(0, limit).map(toPet);
  const last = pets.at(-1);
  if (rows.length <= limit || last === undefined) return { pets };
  const next = new URLSearchParams({
    limit: String(limit),
    ...(status ? { status } : {}),
    cursor: encodeCursor(last.id, status),
  });
  return { pets, link: `</v1/pets?${next.toString()}>; rel="next"` };
}

export async function createPet(body: unknown): Promise<Pet> {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new HttpError(400, 'Request body must be a JSON object');
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
  const { rows } = await pool.query<PetRow>(INSERT, [name, categoryId, isPetStatus(status) ? status : 'available']);
  const row = rows[0];
  if (row === undefined) throw new Error('INSERT INTO pets returned no row');
  return toPet(row);
}

export async function getPet(petId: string): Promise<Pet> {
  const id = /^\d{1,16}$/.test(petId) ? Number(petId) : 0;
  if (id < 1 || id > MAX_PET_ID) throw new HttpError(404, `Pet ${petId.slice(0, 40)} does not exist`);
  const { rows } = await pool.query<PetRow>(BY_ID, [id]);
  const row = rows[0];
  if (row === undefined) throw new HttpError(404, `Pet ${id} does not exist`);
  return toPet(row);
}

/** Every failure as {code, message, status}: ours, body-parser's (413, 415, 400), pg's (503) or a bug (500). */
export function errorAnswer(error: unknown): {
  status: number;
  headers: Record<string, string>;
  body: { code: string; message: string; status: number };
} {
  const failure = error instanceof HttpError ? error : fromLibrary(error);
  if (failure.status >= 500) console.error(error);
  return {
    status: failure.status,
    headers: failure.headers,
    body: { code: CODES[failure.status] ?? 'invalid_request', message: failure.message, status: failure.status },
  };
}

export function closePool(): Promise<void> {
  return pool.end();
}

function fromLibrary(error: unknown): HttpError {
  const status =
    typeof error === 'object' && error !== null && 'status' in error && typeof error.status === 'number'
      ? error.status
      : 500;
  const code = typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : '';
  if (status === 413) return new HttpError(413, `Request body exceeds the ${BODY_LIMIT_BYTES / 1024} KiB limit`);
  if (status === 415) return new HttpError(415, 'Content-Type must be application/json');
  if (status >= 400 && status < 500) return new HttpError(status, 'Request body is not valid JSON');
  // Connection exceptions, shutdown, socket errors: the database is not answering.
  if (/^(08|57P0)|^E[A-Z]/.test(code))
    return new HttpError(503, 'The service cannot reach its database; retry later', { 'Retry-After': '5' });
  return new HttpError(500, 'Internal server error');
}

function limitProblems(value: unknown): string[] {
  const ok =
    typeof value === 'string' &&
    /^\d{1,3}$/.test(value) &&
    Number(value) >= PAGE_LIMIT.min &&
    Number(value) <= PAGE_LIMIT.max;
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
  if (signature.length !== expected.length || !timingSafeEqual(signature, expected))
    throw new HttpError(400, 'cursor is not one this service issued');
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
