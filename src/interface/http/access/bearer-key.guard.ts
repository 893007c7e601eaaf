import { hash } from 'node:crypto';
import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import { LRUCache } from 'lru-cache';
import { ApiKeys } from '../../../application/access/api-keys.js';
import { RateLimits, type RateLimitState } from '../../../application/platform/rate-limits.js';
import { ApiError } from '../platform/api-error.js';
import type { AuthenticatedRequest } from '../platform/caller.decorator.js';
import { IS_PUBLIC } from '../platform/public.js';

const REALM = 'Bearer realm="petstore"';

/**
 * How long a key that proved valid in a store lookup may still spend a lookup from a blocked
 * address. Longer than ApiKeys' own cache (the revocation bound, a few seconds), so that a key in
 * steady use keeps working through a block that someone else's wrong keys caused.
 */
const VOUCHED_SECONDS = 600;

/**
 * `Authorization: Bearer <key>` (scheme case-insensitive) on every route not marked @Public(),
 * and the rate limits: per API key once authenticated, per client address for wrong keys (so keys
 * cannot be guessed at speed). Only a presented key that is wrong counts as a failure; a request
 * without a key costs nothing. Past the failure limit, an address's unknown keys get 429 without
 * a store lookup; a key ApiKeys recognises, or one vouched for by a recent lookup, is answered as usual.
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

  /** SHA-256 of keys a store lookup accepted (never the keys); a guess never gets in. */
  private readonly vouched = new LRUCache<string, true>({ max: 10_000, ttl: VOUCHED_SECONDS * 1000 });

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const handler = context.getHandler();
    let isPublic = this.publicHandlers.get(handler);
    if (isPublic === undefined) {
      isPublic = this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [handler, context.getClass()]) === true;
      this.publicHandlers.set(handler, isPublic);
    }
    if (isPublic) return true;
    const http = context.switchToHttp();
    const request = http.getRequest<AuthenticatedRequest>();
    const response = http.getResponse<Response>();
    const key = bearerKey(request.headers.authorization);
    // RFC 6750 section 3: a challenge on every 401. No key is no guess: it counts toward no limit.
    if (key === null)
      throw new ApiError(401, 'Missing API key: send Authorization: Bearer <key>', { 'WWW-Authenticate': REALM });
    const caller = this.apiKeys.recognise(key) ?? (await this.lookUp(key, clientAddress(request), response));
    const state = await this.rateLimits.hitKey(caller);
    if (state !== null) {
      setRateLimitHeaders(response, state);
      if (state.refused) throw tooManyRequests(state, 'Rate limit exceeded for this API key');
    }
    request.caller = caller;
    return true;
  }

  /** A key not recognised without the store: looked up unless its address is blocked; a wrong one counts. */
  private async lookUp(key: string, address: string, response: Response): Promise<string> {
    const fingerprint = hash('sha256', key);
    const block = await this.rateLimits.failedAuthenticationBlock(address);
    // Telling a valid key from a guess needs the lookup the block exists to spare: only a key a
    // lookup accepted recently gets one. Any other key, valid or not, waits for the block to end.
    if (block !== null && !this.vouched.has(fingerprint)) {
      setRateLimitHeaders(response, block);
      throw tooManyRequests(block, 'Too many failed authentications from this address');
    }
    const caller = await this.apiKeys.identify(key);
    if (caller !== null) {
      this.vouched.set(fingerprint, true);
      return caller;
    }
    this.vouched.delete(fingerprint);
    const failures = await this.rateLimits.hitFailedAuthentication(address);
    if (failures !== null) {
      setRateLimitHeaders(response, failures);
      if (failures.refused) throw tooManyRequests(failures, 'Too many failed authentications from this address');
    }
    throw new ApiError(401, 'Invalid API key', { 'WWW-Authenticate': `${REALM}, error="invalid_token"` });
  }
}

function clientAddress(request: Request): string {
  return request.ip ?? request.socket.remoteAddress ?? 'unknown';
}

/**
 * IETF draft "RateLimit header fields for HTTP": the policy (quota q per window w seconds) and
 * where the counter stands (r remaining, t seconds to reset). A 429's first item names the policy
 * that refused it.
 */
function setRateLimitHeaders(response: Response, state: RateLimitState): void {
  response.setHeader('RateLimit-Policy', `"${state.policy}";q=${state.quota};w=${state.windowSeconds}`);
  response.setHeader('RateLimit', `"${state.policy}";r=${state.remaining};t=${state.resetSeconds}`);
}

function tooManyRequests(state: RateLimitState, reason: string): ApiError {
  return new ApiError(429, `${reason}; retry in ${state.resetSeconds} s`, {
    'Retry-After': String(state.resetSeconds),
  });
}

function bearerKey(header: string | undefined): string | null {
  const match = /^Bearer +(\S+) *$/i.exec(header ?? '');
  return match?.[1] ?? null;
}
