import { type CallHandler, type ExecutionContext, Injectable, type NestInterceptor } from '@nestjs/common';
import bodyParser from 'body-parser';
import type { Request, Response } from 'express';
import { from, type Observable, switchMap } from 'rxjs';
import { ApiError } from './api-error.js';

export const JSON_BODY_LIMIT = 16 * 1024;

const parseJson = bodyParser.json({ limit: JSON_BODY_LIMIT, strict: false, type: () => true });

/**
 * Reads the JSON body of the routes that take one. It runs after the bearer-key guard (Nest runs
 * Express middleware before guards, so the body parser is not middleware here): a caller without
 * a valid key gets 401 whatever its body, and nothing is read for it.
 */
@Injectable()
export class JsonBodyInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const http = context.switchToHttp();
    return from(readJsonObject(http.getRequest<Request>(), http.getResponse<Response>())).pipe(switchMap(() => next.handle()));
  }
}

async function readJsonObject(request: Request, response: Response): Promise<void> {
  const contentType = request.headers['content-type'];
  const hasBody = request.headers['transfer-encoding'] !== undefined || (request.headers['content-length'] ?? '0') !== '0';
  if (contentType === undefined ? hasBody : !/^application\/json\s*(;|$)/i.test(contentType)) {
    throw new ApiError(415, 'Content-Type must be application/json');
  }
  if (!hasBody) throw new ApiError(400, 'Request body must be a JSON object');
  await new Promise<void>((resolve, reject) => parseJson(request, response, (error?: unknown) => (error ? reject(error) : resolve())));
  const body: unknown = request.body;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ApiError(400, 'Request body must be a JSON object');
  }
}
