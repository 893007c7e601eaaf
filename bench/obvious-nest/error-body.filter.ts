import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, HttpStatus } from '@nestjs/common';
import type { Response } from 'express';

const CODES: Record<number, string> = {
  400: 'invalid_request',
  401: 'unauthorized',
  404: 'not_found',
  413: 'payload_too_large',
  500: 'internal_error',
};

/** Every error as the API's Error body: {code, message, status}. */
@Catch()
export class ErrorBodyFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): void {
    const status = exception instanceof HttpException ? exception.getStatus() : HttpStatus.INTERNAL_SERVER_ERROR;
    const message = exception instanceof HttpException ? messageOf(exception) : 'Internal server error';
    if (status >= 500) console.error(exception);
    host
      .switchToHttp()
      .getResponse<Response>()
      .status(status)
      .json({ code: CODES[status] ?? 'invalid_request', message, status });
  }
}

/** ValidationPipe's BadRequestException carries a list of messages. */
function messageOf(exception: HttpException): string {
  const response = exception.getResponse();
  if (typeof response === 'object' && 'message' in response) {
    const { message } = response;
    if (Array.isArray(message)) return message.join('; ');
    if (typeof message === 'string') return message;
  }
  return exception.message;
}
