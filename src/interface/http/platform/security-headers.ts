import type { IncomingMessage, ServerResponse } from 'node:http';
import helmet from 'helmet';

/**
 * helmet on every answer, run per request as its documentation shows: Swagger UI at /docs gets a
 * Content-Security-Policy it works under, every other answer one that allows nothing. Registered
 * before the routes, so refusals, 404s and the document carry them too.
 */
export function securityHeaders(servers: string[]) {
  const forDocs = helmet({
    contentSecurityPolicy: {
      directives: {
        // Swagger UI loads its scripts from /docs and calls the API at the document's servers.
        'connect-src': ["'self'", ...servers.flatMap(originOf)],
        // Swagger UI's page carries inline <style> and its components set style attributes.
        'style-src': ["'self'", "'unsafe-inline'"],
        'img-src': ["'self'", 'data:'],
        'frame-ancestors': ["'none'"],
        // HTTPS is the balancer's to enforce (HSTS below); a page opened over plain HTTP still works.
        'upgrade-insecure-requests': null,
      },
    },
    xFrameOptions: { action: 'deny' },
  });
  // JSON answers run nothing, load nothing and are framed nowhere (OWASP REST Security cheat sheet).
  const forApi = helmet({
    contentSecurityPolicy: {
      useDefaults: false,
      directives: { 'default-src': ["'none'"], 'frame-ancestors': ["'none'"] },
    },
    xFrameOptions: { action: 'deny' },
  });
  return (request: IncomingMessage, response: ServerResponse, next: (error?: unknown) => void): void => {
    (isDocsPath(request.url ?? '') ? forDocs : forApi)(request, response, next);
  };
}

function isDocsPath(url: string): boolean {
  return url === '/docs' || url.startsWith('/docs/') || url.startsWith('/docs?');
}

function originOf(server: string): string[] {
  return URL.canParse(server) ? [new URL(server).origin] : [];
}
