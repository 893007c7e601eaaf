import { createHash } from 'node:crypto';
import { type CallHandler, type ExecutionContext, Injectable, type NestInterceptor } from '@nestjs/common';
import { HTTP_CODE_METADATA } from '@nestjs/common/constants.js';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import { from, lastValueFrom, type Observable } from 'rxjs';
import { IdempotencyStore } from '../../application/idempotency-store.js';
import { ApiError } from './api-error.js';
import { callerOf } from './bearer-key.guard.js';

export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';
const VISIBLE_ASCII = /^[\x21-\x7e]{1,255}$/;

/**
 * Idempotency-Key on POST /v1/pets (IETF draft "The Idempotency-Key HTTP Header Field", Stripe's
 * practice): a retry with the same key and body from the same API key within 24 hours gets the
 * original 201 and creates nothing; another body is a 422; a retry while the first is in flight
 * is a 409. Runs after JsonBodyInterceptor, so the body is parsed and fingerprinted here.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  constructor(
    private readonly store: IdempotencyStore,
    private readonly reflector: Reflector,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const http = context.switchToHttp();
    const request = http.getRequest<Request>();
    const response = http.getResponse<Response>();
    const key = request.headers[IDEMPOTENCY_KEY_HEADER.toLowerCase()];
    if (key === undefined) return next.handle();
    if (typeof key !== 'string' || !VISIBLE_ASCII.test(key)) {
      throw new ApiError(400, `${IDEMPOTENCY_KEY_HEADER} header must be 1 to 255 visible ASCII characters, sent once`);
    }
    // Nest applies @HttpCode when it sends the body, after this interceptor has it.
    const successStatus = this.reflector.get<number | undefined>(HTTP_CODE_METADATA, context.getHandler()) ?? 200;

    let fresh: unknown;
    return from(
      this.store
        .once({ caller: callerOf(request), key, fingerprint: fingerprintOf(request.body) }, async () => {
          fresh = await lastValueFrom(next.handle());
          const location = response.getHeader('Location');
          return { status: successStatus, body: JSON.stringify(fresh), location: typeof location === 'string' ? location : null };
        })
        .then(({ response: stored, replayed }): unknown => {
          if (!replayed) return fresh;
          response.status(stored.status).setHeader('Idempotent-Replayed', 'true');
          if (stored.location !== null) response.setHeader('Location', stored.location);
          return JSON.parse(stored.body);
        }),
    );
  }
}

/** SHA-256 of the body with object keys sorted: the same JSON object matches however it was laid out. */
function fingerprintOf(body: unknown): string {
  return createHash('sha256').update(JSON.stringify(body, (_key, value: unknown) => sortKeys(value))).digest('hex');
}

function sortKeys(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  return Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
