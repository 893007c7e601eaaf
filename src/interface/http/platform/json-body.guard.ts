import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import { isUtf8 } from 'node:buffer';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { Request, Response } from 'express';
import getRawBody from 'raw-body';
import { ApiError } from './api-error.js';

export const JSON_BODY_LIMIT = 16 * 1024;
/** NewPet is flat; anything deeper is refused before it reaches recursive code (class-transformer, JSON.stringify). */
export const JSON_MAX_DEPTH = 32;

const DECODERS = new Map<string, () => NodeJS.ReadWriteStream>([
  ['gzip', createGunzip],
  ['deflate', createInflate],
  ['br', createBrotliDecompress],
]);

/**
 * Reads the JSON body of the routes that take one, and lets the request through only with a JSON
 * object: 415 for another media type or charset, 413 over 16 KiB, 400 for anything else.
 *
 * A guard, on the route, because the routes run after authentication (the bearer-key middleware,
 * in front of every path under /v1; a global body parser would read bodies before it): a caller
 * without a valid key gets 401 whatever its body, and nothing is read for it. Not
 * an interceptor: a route with any interceptor pays for Nest's rxjs plumbing on every request,
 * ~10% of a create in the CPU profile.
 */
@Injectable()
export class JsonBodyGuard implements CanActivate {
  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    await readJsonObject(http.getRequest<Request>(), http.getResponse<Response>());
    return true;
  }
}

async function readJsonObject(request: Request, response: Response): Promise<void> {
  const contentType = request.headers['content-type'];
  const hasBody =
    request.headers['transfer-encoding'] !== undefined || (request.headers['content-length'] ?? '0') !== '0';
  if (contentType === undefined ? hasBody : !/^application\/json\s*(;|$)/i.test(contentType)) {
    throw new ApiError(415, 'Content-Type must be application/json');
  }
  // JSON is UTF-8 (RFC 8259): no other charset is decoded.
  const charset = /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(contentType ?? '')?.[1]?.toLowerCase();
  if (charset !== undefined && charset !== 'utf-8') throw new ApiError(415, 'Content-Type charset must be utf-8');
  if (!hasBody) throw notAnObject();
  const encoding = (request.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity' && !DECODERS.has(encoding))
    throw new ApiError(415, 'Content-Encoding must be gzip, deflate, br or identity');
  // Refused as soon as it is known to be too large: nothing of it is read (and no 100 Continue sent).
  // A compressed body is held to the same limit as sent, as well as once decoded.
  if (Number(request.headers['content-length'] ?? 0) > JSON_BODY_LIMIT) throw tooLarge();
  // The client waits for this before it sends the body (app.ts stops Node from sending it for every request).
  if (/^100-continue$/i.test(request.headers.expect ?? '')) response.writeContinue();
  const bytes = await readBody(request, encoding);
  // Decoding would replace invalid bytes with U+FFFD and store something other than what was sent.
  if (!isUtf8(bytes)) throw new ApiError(400, 'Request body is not valid UTF-8');
  let body: unknown;
  try {
    // A byte order mark may lead JSON text, and is not part of it (RFC 8259, section 8.1).
    body = JSON.parse(bytes.toString('utf8').replace(/^\uFEFF/, ''));
  } catch {
    throw new ApiError(400, 'Request body is not valid JSON');
  }
  request.body = body;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw notAnObject();
  if (depthExceeds(body, JSON_MAX_DEPTH))
    throw new ApiError(400, `Request body is nested more than ${JSON_MAX_DEPTH} levels deep`);
}

/**
 * raw-body (what body-parser reads with) rather than body-parser: on a body over the limit
 * body-parser reads the rest of it to its end before it answers, however large. raw-body stops at
 * the limit (counted after decompression), and the answer then closes the connection.
 */
async function readBody(request: Request, encoding: string): Promise<Buffer> {
  const decoder = DECODERS.get(encoding);
  // A decoder's error (bytes that are not gzip, ...) reaches raw-body, which reports it below.
  const stream: NodeJS.ReadableStream = decoder === undefined ? request : request.pipe(decoder());
  try {
    return await getRawBody(stream, {
      limit: JSON_BODY_LIMIT,
      length: decoder === undefined ? request.headers['content-length'] : undefined,
    });
  } catch (error) {
    if (stream !== request) request.unpipe();
    // raw-body's own errors carry a `type`; a decoder's (bytes that are not gzip, ...) do not.
    const type = typeof error === 'object' && error !== null && 'type' in error ? error.type : null;
    if (type === 'entity.too.large') throw tooLarge();
    if (type === 'request.aborted' || type === 'request.size.invalid')
      throw new ApiError(400, 'Request body was not received completely');
    if (type !== null) throw error;
    throw new ApiError(400, `Request body is not valid ${encoding} data`);
  }
}

const tooLarge = () => new ApiError(413, `Request body exceeds the ${JSON_BODY_LIMIT / 1024} KiB limit`);
const notAnObject = () => new ApiError(400, 'Request body must be a JSON object');

/** Iterative, so that the check itself cannot overflow the stack. */
function depthExceeds(root: object, maxDepth: number): boolean {
  const pending: [unknown, number][] = [[root, 1]];
  for (let item = pending.pop(); item !== undefined; item = pending.pop()) {
    const [value, depth] = item;
    if (typeof value !== 'object' || value === null) continue;
    if (depth > maxDepth) return true;
    for (const child of Object.values(value)) pending.push([child, depth + 1]);
  }
  return false;
}
