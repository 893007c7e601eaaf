import type { NextFunction, Request, Response } from 'express';
import { API_PREFIX } from '../platform/api-prefix.js';

/** getPet is deprecated: removal on 5 December 2030; the replacement is GET /pets with a status filter. */
export const GET_PET_SUNSET = 'Thu, 05 Dec 2030 00:00:00 GMT';
/** Deprecated since version 1.0.0 was published, 2026-11-21T00:00:00Z (RFC 9745 wants "@<unix seconds>"). */
export const GET_PET_DEPRECATION = '@1795219200';

/**
 * Express middleware ahead of routing, not an interceptor: every getPet response, 401, 404 and the
 * router's own 400 for an undecodable path included, carries Sunset (RFC 8594) and Deprecation
 * (RFC 9745).
 */
const GET_PET_PATH = new RegExp(`^${API_PREFIX}/pets/[^/]+/?$`);

export function announceGetPetDeprecation(request: Request, response: Response, next: NextFunction): void {
  if ((request.method === 'GET' || request.method === 'HEAD') && GET_PET_PATH.test(request.path)) {
    response.setHeader('Sunset', GET_PET_SUNSET);
    response.setHeader('Deprecation', GET_PET_DEPRECATION);
  }
  next();
}
