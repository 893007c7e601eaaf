import { hash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { IdempotencyStore } from '../../application/idempotency-store.js';
import type { PetRepository } from '../../domain/pet-repository.js';
import { ApiError } from './api-error.js';
import { callerOf } from './bearer-key.guard.js';

export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';
const HEADER_NAME = IDEMPOTENCY_KEY_HEADER.toLowerCase();
const VISIBLE_ASCII = /^[\x21-\x7e]{1,255}$/;

/**
 * Idempotency-Key on POST /v1/pets (IETF draft "The Idempotency-Key HTTP Header Field", Stripe's
 * practice): a retry with the same key and body from the same API key within 24 hours gets the
 * original 201 and creates nothing; another body is a 422; a retry while the first is in flight
 * is a 409.
 *
 * Called by the handler, after the body has been validated, rather than run as an interceptor:
 * a route with any interceptor pays for Nest's rxjs plumbing on every request (~10% of a create in
 * the CPU profile), and an invalid body is refused before a transaction is opened for it.
 */
@Injectable()
export class IdempotentResponses {
  constructor(private readonly store: IdempotencyStore) {}

  /**
   * Runs `create` (which answers `status`) once per Idempotency-Key, or at once without the header.
   * With a key, `create` is given the pets of the transaction that also stores its answer.
   * A replay sets the stored status and Location and resolves to the stored body.
   */
  async once<T>(request: Request, response: Response, status: number, create: (pets?: PetRepository) => Promise<T>): Promise<T> {
    const key = request.headers[HEADER_NAME];
    if (key === undefined) return create();
    if (typeof key !== 'string' || !VISIBLE_ASCII.test(key)) {
      throw new ApiError(400, `${IDEMPOTENCY_KEY_HEADER} header must be 1 to 255 visible ASCII characters, sent once`);
    }
    let fresh: T | undefined;
    const { response: stored, replayed } = await this.store.once({ caller: callerOf(request), key, fingerprint: fingerprintOf(request.body) }, async (pets) => {
      fresh = await create(pets);
      const location = response.getHeader('Location');
      return { status, body: JSON.stringify(fresh), location: typeof location === 'string' ? location : null };
    });
    if (!replayed) return fresh as T;
    response.status(stored.status).setHeader('Idempotent-Replayed', 'true');
    if (stored.location !== null) response.setHeader('Location', stored.location);
    // The body this same operation answered the first time.
    return JSON.parse(stored.body) as T;
  }
}

/** SHA-256 of the body with object keys sorted: the same JSON object matches however it was laid out. */
function fingerprintOf(body: unknown): string {
  return hash('sha256', JSON.stringify(body, (_key, value: unknown) => sortKeys(value)), 'hex');
}

function sortKeys(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  return Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
