import { type CanActivate, type ExecutionContext, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { ApiKeys } from '../../application/api-keys.js';
import { RateLimits } from '../../application/rate-limits.js';
import { ApiError } from './api-error.js';

const IS_PUBLIC = 'petstore:public';

/** Marks a controller or route that needs no key (health, docs). Everything else does. */
export const Public = (): ClassDecorator & MethodDecorator => SetMetadata(IS_PUBLIC, true);

const REALM = 'Bearer realm="petstore"';

const callers = new WeakMap<Request, string>();

/** Who sent an authenticated request: the caller id ApiKeys gave for its key, never the key itself. */
export function callerOf(request: Request): string {
  const caller = callers.get(request);
  if (caller === undefined) throw new Error('callerOf() on a request the bearer-key guard did not authenticate');
  return caller;
}

/**
 * `Authorization: Bearer <key>` (scheme case-insensitive) on every route not marked @Public(),
 * and the rate limits: per API key once authenticated, per client address for failures (so keys
 * cannot be guessed at speed).
 */
@Injectable()
export class BearerKeyGuard implements CanActivate {
  constructor(
    private readonly apiKeys: ApiKeys,
    private readonly rateLimits: RateLimits,
    private readonly reflector: Reflector,
  ) {}

  /** Whether a route is @Public() never changes: looked up once per handler, not per request. */
  private readonly publicHandlers = new WeakMap<object, boolean>();

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const handler = context.getHandler();
    let isPublic = this.publicHandlers.get(handler);
    if (isPublic === undefined) {
      isPublic = this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [handler, context.getClass()]) === true;
      this.publicHandlers.set(handler, isPublic);
    }
    if (isPublic) return true;
    const request = context.switchToHttp().getRequest<Request>();
    const address = request.ip ?? request.socket.remoteAddress ?? 'unknown';
    const key = bearerKey(request.headers.authorization);
    let caller = key === null ? null : this.apiKeys.recognise(key);
    if (caller === null && key !== null) {
      // An address over its limit costs no store lookup, however many keys it tries.
      const blocked = await this.rateLimits.failedAuthenticationBlock(address);
      if (blocked !== null) throw tooManyRequests(blocked, 'Too many failed authentications from this address');
      caller = await this.apiKeys.identify(key);
    }
    if (caller === null) {
      const wait = await this.rateLimits.hitFailedAuthentication(address);
      if (wait !== null) throw tooManyRequests(wait, 'Too many failed authentications from this address');
      // RFC 6750 section 3: a challenge on every 401; error="invalid_token" only when a key was presented.
      if (key === null)
        throw new ApiError(401, 'Missing API key: send Authorization: Bearer <key>', { 'WWW-Authenticate': REALM });
      throw new ApiError(401, 'Invalid API key', { 'WWW-Authenticate': `${REALM}, error="invalid_token"` });
    }
    const wait = await this.rateLimits.hitKey(caller);
    if (wait !== null) throw tooManyRequests(wait, 'Rate limit exceeded for this API key');
    callers.set(request, caller);
    return true;
  }
}

function tooManyRequests(seconds: number, reason: string): ApiError {
  return new ApiError(429, `${reason}; retry in ${seconds} s`, { 'Retry-After': String(seconds) });
}

function bearerKey(header: string | undefined): string | null {
  const match = /^Bearer +(\S+) *$/i.exec(header ?? '');
  return match?.[1] ?? null;
}
