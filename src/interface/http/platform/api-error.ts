import { HttpException } from '@nestjs/common';
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
 * An HTTP-only failure raised at the edge (authentication, guards, pipes, controller); written as
 * is by the filter, or by the error handler behind authentication. Nest's own HttpException, so
 * Nest's filters and interceptors, and a reader's habits, know it (`getStatus()`, `message`);
 * the headers go with the answer.
 */
export class ApiError extends HttpException {
  constructor(
    status: ErrorStatus,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message, status);
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
