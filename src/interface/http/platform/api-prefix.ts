/** The version segment every operation's path starts with (the spec's base addresses end in it). */
export const API_PREFIX = '/v1';

const UNDER_API_PREFIX = `${API_PREFIX}/`;

/**
 * Whether a request's path is the API's: `/v1` itself or anything under it, case-sensitively, as
 * the routes read it (node-protocol.ts). The one place that decides which answers authentication
 * and the API's headers apply to.
 */
export function isApiPath(path: string): boolean {
  return path === API_PREFIX || path.startsWith(UNDER_API_PREFIX);
}
