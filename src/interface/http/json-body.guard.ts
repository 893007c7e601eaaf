import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import { isUtf8 } from 'node:buffer';
import bodyParser from 'body-parser';
import type { Request, Response } from 'express';
import { ApiError } from './api-error.js';

export const JSON_BODY_LIMIT = 16 * 1024;
/** NewPet is flat; anything deeper is refused before it reaches recursive code (class-transformer, JSON.stringify). */
export const JSON_MAX_DEPTH = 32;

const parseJson = bodyParser.json({
  limit: JSON_BODY_LIMIT,
  strict: false,
  type: () => true,
  // body-parser would replace invalid UTF-8 with U+FFFD and store something other than what was sent.
  verify: (_request, _response, bytes) => {
    if (!isUtf8(bytes)) throw Object.assign(new Error('Request body is not valid UTF-8'), { status: 400, type: 'encoding.invalid' });
  },
});

/**
 * Reads the JSON body of the routes that take one, and lets the request through only with a JSON
 * object: 415 for another media type or charset, 413 over 16 KiB, 400 for anything else.
 *
 * A guard, on the route, because guards run after the global bearer-key guard (Nest runs Express
 * middleware before any guard, so a body parser there would read bodies for callers without a
 * key): a caller without a valid key gets 401 whatever its body, and nothing is read for it. Not
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
  const hasBody = request.headers['transfer-encoding'] !== undefined || (request.headers['content-length'] ?? '0') !== '0';
  if (contentType === undefined ? hasBody : !/^application\/json\s*(;|$)/i.test(contentType)) {
    throw new ApiError(415, 'Content-Type must be application/json');
  }
  // JSON is UTF-8 (RFC 8259); body-parser would also decode utf-16 and utf-7.
  const charset = /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(contentType ?? '')?.[1]?.toLowerCase();
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    throw new ApiError(415, 'Content-Type charset must be utf-8');
  }
  if (!hasBody) throw new ApiError(400, 'Request body must be a JSON object');
  await new Promise<void>((resolve, reject) => parseJson(request, response, (error?: unknown) => (error ? reject(error) : resolve())));
  const body: unknown = request.body;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ApiError(400, 'Request body must be a JSON object');
  }
  if (depthExceeds(body, JSON_MAX_DEPTH)) throw new ApiError(400, `Request body is nested more than ${JSON_MAX_DEPTH} levels deep`);
}

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
