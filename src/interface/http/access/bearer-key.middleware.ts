import { hash } from 'node:crypto';
import { Injectable, type NestMiddleware } from '@nestjs/common';
import type { Response } from 'express';
import { LRUCache } from 'lru-cache';
import { ApiKeys } from '../../../application/access/api-keys.js';
import { RateLimits, type RateLimitState } from '../../../application/platform/rate-limits.js';
import { ApiError } from '../platform/api-error.js';
import type { AuthenticatedRequest } from '../platform/caller.decorator.js';
import { clientAddress } from '../platform/client-address.js';

const REALM = 'Bearer realm="petstore"';

/** The same on every request: built once. RFC 6750 section 3: a challenge on every 401. */
const MISSING_KEY = new ApiError(401, 'Missing API key: send Authorization: Bearer <key>', {
  'WWW-Authenticate': REALM,
});
const INVALID_KEY = new ApiError(401, 'Invalid API key', { 'WWW-Authenticate': `${REALM}, error="invalid_token"` });

/**
 * How long a key that proved valid in a store lookup may still spend a lookup from a blocked
 * address. Longer than ApiKeys' own cache (the revocation bound, a few seconds), so that a key in
 * steady use keeps working through a block that someone else's wrong keys caused.
 */
const VOUCHED_SECONDS = 600;
/** Keys vouched for at most; past that, the least recently vouched is forgotten. */
export const MAX_VOUCHED_KEYS = 10_000;

/**
 * `Authorization: Bearer <key>` (scheme case-insensitive) on every path under /v1, and the rate
 * limits: per API key once authenticated, per client address for wrong keys (so keys cannot be
 * guessed at speed). Only a presented key that is wrong counts as a failure; a request without a
 * key costs nothing. Past the failure limit, an address's unknown keys get 429 without a store
 * lookup; a key ApiKeys recognises, or one vouched for by a recent lookup, is answered as usual.
 * A refusal is an ApiError, passed to the error handler app.ts puts behind it.
 *
 * A middleware at the edge (app.ts), not a guard: it runs before any route is looked for, the
 * request log's and Nest's own middleware included, so that a refusal, the commonest answer under
 * a flood of wrong keys, costs as little as it can (docs/security.md).
 */
@Injectable()
export class BearerKeyMiddleware implements NestMiddleware<AuthenticatedRequest, Response> {
  constructor(
    private readonly apiKeys: ApiKeys,
    private readonly rateLimits: RateLimits,
  ) {}

  /**
   * SHA-256 of keys a store lookup accepted (never the keys); a guess never gets in. Bounded by
   * maxSize, one per entry: `max` would allocate room for every entry up front.
   */
  private readonly vouched = new LRUCache<string, true>({
    maxSize: MAX_VOUCHED_KEYS,
    sizeCalculation: () => 1,
    ttl: VOUCHED_SECONDS * 1000,
  });

  /**
   * A refusal goes to `next(error)`. A request without a key, and a guess from an address this
   * instance already knows blocked (the bulk of a flood), are refused at once, without a promise.
   */
  use(request: AuthenticatedRequest, response: Response, next: (error?: unknown) => void): void {
    const key = bearerKey(request.headers.authorization);
    // No key is no guess: it counts toward no limit.
    if (key === null) return next(MISSING_KEY);
    const known = this.apiKeys.recognise(key);
    if (known !== null) {
      this.admit(known, request, response).then(() => next(), next);
      return;
    }
    const address = clientAddress(request);
    const fingerprint = hash('sha256', key);
    const knownBlock = this.rateLimits.knownFailedAuthenticationBlock(address);
    if (knownBlock !== null && !this.vouched.has(fingerprint)) return next(this.blockedAddress(knownBlock, response));
    this.lookUp(key, fingerprint, address, response)
      .then((caller) => this.admit(caller, request, response))
      .then(() => next(), next);
  }

  /** The caller's own limit, then the request goes on as theirs. */
  private async admit(caller: string, request: AuthenticatedRequest, response: Response): Promise<void> {
    const state = await this.rateLimits.hitKey(caller);
    if (state !== null) {
      setRateLimitHeaders(response, state);
      if (state.refused) throw this.tooManyRequests(state, 'Rate limit exceeded for this API key');
    }
    request.caller = caller;
  }

  /** A key not recognised without the store: looked up unless its address is blocked; a wrong one counts. */
  private async lookUp(key: string, fingerprint: string, address: string, response: Response): Promise<string> {
    const block = await this.rateLimits.failedAuthenticationBlock(address);
    // Telling a valid key from a guess needs the lookup the block exists to spare: only a key a
    // lookup accepted recently gets one. Any other key, valid or not, waits for the block to end.
    if (block !== null && !this.vouched.has(fingerprint)) throw this.blockedAddress(block, response);
    const caller = await this.apiKeys.identify(key);
    if (caller !== null) {
      this.vouched.set(fingerprint, true);
      return caller;
    }
    this.vouched.delete(fingerprint);
    const failures = await this.rateLimits.hitFailedAuthentication(address);
    if (failures !== null) {
      setRateLimitHeaders(response, failures);
      if (failures.refused) throw this.tooManyRequests(failures, FAILED_AUTHENTICATIONS);
    }
    throw INVALID_KEY;
  }

  private blockedAddress(block: RateLimitState, response: Response): ApiError {
    setRateLimitHeaders(response, block);
    return this.tooManyRequests(block, FAILED_AUTHENTICATIONS);
  }

  /**
   * The 429s, each built once for its reason and wait (whole seconds of a window), as MISSING_KEY
   * and INVALID_KEY are: an ApiError is an Error, which captures a stack trace when it is built,
   * the dearest part of a refusal under a flood of wrong keys (docs/performance.md).
   */
  private readonly refusals = new LRUCache<string, ApiError>({ maxSize: 1000, sizeCalculation: () => 1 });

  private tooManyRequests(state: RateLimitState, reason: string): ApiError {
    const key = `${state.resetSeconds} ${reason}`;
    let refusal = this.refusals.get(key);
    if (refusal === undefined) {
      refusal = new ApiError(429, `${reason}; retry in ${state.resetSeconds} s`, {
        'Retry-After': String(state.resetSeconds),
      });
      this.refusals.set(key, refusal);
    }
    return refusal;
  }
}

const FAILED_AUTHENTICATIONS = 'Too many failed authentications from this address';

/**
 * IETF draft "RateLimit header fields for HTTP": the policy (quota q per window w seconds) and
 * where the counter stands (r remaining, t seconds to reset). A 429's first item names the policy
 * that refused it.
 */
function setRateLimitHeaders(response: Response, state: RateLimitState): void {
  response.setHeader('RateLimit-Policy', `"${state.policy}";q=${state.quota};w=${state.windowSeconds}`);
  response.setHeader('RateLimit', `"${state.policy}";r=${state.remaining};t=${state.resetSeconds}`);
}

function bearerKey(header: string | undefined): string | null {
  const match = /^Bearer +(\S+) *$/i.exec(header ?? '');
  return match?.[1] ?? null;
}
