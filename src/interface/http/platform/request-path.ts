/**
 * The path a request asked for, as the client sent it (under /v1 too), without its query: Express's
 * `originalUrl`, since `url` has lost the prefix of a router mounted on a path; else Node's `url`.
 */
export function pathOf(request: { originalUrl?: unknown; url?: string }): string {
  const url = typeof request.originalUrl === 'string' ? request.originalUrl : (request.url ?? '');
  return url.split('?', 1)[0] ?? '';
}
