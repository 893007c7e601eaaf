import type { components } from './petstore-api.js';

/** The `code` of the service's Error body, or `unexpected_response` for an answer without one (a proxy's page). */
export type ErrorCode = components['schemas']['Error']['code'] | 'unexpected_response';

/** Every answer that is not 2xx, as one error: what the body says, the status, and the id to quote. */
export class PetstoreError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly status: number,
    /** `X-Request-Id` of the answer: quote it when reporting a problem. */
    readonly requestId: string | null,
  ) {
    super(message);
    this.name = 'PetstoreError';
  }

  /** From an answer and its body as openapi-fetch parsed it (JSON, else text). */
  static fromAnswer(response: Response, body: unknown): PetstoreError {
    const requestId = response.headers.get('x-request-id');
    if (isErrorBody(body)) return new PetstoreError(body.code, body.message, response.status, requestId);
    const text = typeof body === 'string' ? body.slice(0, 200) : '';
    return new PetstoreError(
      'unexpected_response',
      `HTTP ${response.status} without the service's error body${text ? `: ${text}` : ''}`,
      response.status,
      requestId,
    );
  }
}

function isErrorBody(body: unknown): body is { code: ErrorCode; message: string } {
  return (
    typeof body === 'object' &&
    body !== null &&
    'code' in body &&
    typeof body.code === 'string' &&
    'message' in body &&
    typeof body.message === 'string'
  );
}
