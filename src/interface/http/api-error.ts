import { ApiProperty, ApiSchema } from '@nestjs/swagger';

/** The wire codes of the decisions table, declared once. */
export const ERROR_CODES = {
  400: 'invalid_request',
  401: 'unauthorized',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'idempotency_conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'idempotency_key_reused',
  429: 'rate_limited',
  500: 'internal_error',
  503: 'unavailable',
} as const;

export type ErrorStatus = keyof typeof ERROR_CODES;
export type ErrorCode = (typeof ERROR_CODES)[ErrorStatus];

/**
 * An HTTP-only failure raised at the edge (guard, pipes, controller); written as is by the filter.
 * An expected answer, not a bug: it captures no stack trace (that was most of the cost of a 401).
 */
export class ApiError extends Error {
  readonly status: ErrorStatus;
  readonly code: ErrorCode;
  readonly headers: Record<string, string>;

  constructor(status: ErrorStatus, message: string, headers: Record<string, string> = {}) {
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = stackTraceLimit;
    this.name = 'ApiError';
    this.status = status;
    this.code = ERROR_CODES[status];
    this.headers = headers;
  }
}

@ApiSchema({ name: 'Error', description: 'Body of every non-2xx response.' })
export class ErrorResponse {
  @ApiProperty({
    description: 'Machine-readable error code.',
    enum: Object.values(ERROR_CODES),
    example: 'invalid_request',
  })
  code!: ErrorCode;

  @ApiProperty({
    description: 'Human-readable description naming the field or header at fault.',
    example: 'name must be a string',
  })
  message!: string;

  @ApiProperty({ description: 'The HTTP status code of the response.', type: 'integer', example: 400 })
  status!: number;
}
