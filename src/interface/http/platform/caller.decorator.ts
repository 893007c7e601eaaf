import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';

/** A request once the bearer-key middleware has let it through: who sent it, never the key itself. */
export type AuthenticatedRequest = Request & { caller?: string };

/**
 * The caller id ApiKeys gave for the request's key (`@Caller() caller: string`). Only on routes
 * under /v1, which the bearer-key middleware authenticates: anywhere else there is no caller, and
 * that is a bug.
 */
export const Caller = createParamDecorator((_: unknown, context: ExecutionContext): string => {
  const caller = context.switchToHttp().getRequest<AuthenticatedRequest>().caller;
  if (caller === undefined) throw new Error('@Caller() on a route the bearer-key middleware did not authenticate');
  return caller;
});
