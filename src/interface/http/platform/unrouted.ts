import { NotFoundException } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { answerWithError } from './error.filter.js';

/**
 * Nest answers unknown paths only under its /v1 prefix: everywhere else, an unknown path gets the
 * Error body instead of Express's HTML page. Registered behind every route.
 */
export function answerUnrouted(request: Request, response: Response): void {
  answerWithError(new NotFoundException(), request, response);
}

/**
 * Express's error handler (four parameters make it one): a stray error gets the Error body. An
 * answer already under way cannot become one: Express's own handler then closes the connection,
 * so the client sees it failed.
 */
export function answerUnhandled(error: unknown, request: Request, response: Response, next: NextFunction): void {
  if (response.headersSent) next(error);
  else answerWithError(error, request, response);
}
