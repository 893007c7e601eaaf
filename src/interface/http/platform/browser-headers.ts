import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import type { CorsOptions } from '@nestjs/common/interfaces/external/cors-options.interface.js';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { OpenAPIObject } from '@nestjs/swagger';
import type { Request } from 'express';
import helmet from 'helmet';
import { API_PREFIX } from './api-prefix.js';

type ApiPaths = OpenAPIObject['paths'];

export type BrowserSettings = {
  /** CORS_ORIGINS: exact origins a page may call from; empty: CORS off. */
  corsOrigins: string[];
  /** The OpenAPI servers: an absolute one is another origin Swagger UI's "Try it out" calls. */
  servers: string[];
  /**
   * The OpenAPI document's paths (relative to the API prefix): which methods a preflight may
   * allow, and which headers the operations take and answer with.
   */
  apiPaths: () => ApiPaths;
};

/** Request headers of the platform's own: the key, the body's type, the request id of the log. */
const PLATFORM_REQUEST_HEADERS = ['Authorization', 'Content-Type', 'X-Request-Id'];
/** Response headers of the platform's own (the request log's id), besides those the operations declare. */
const PLATFORM_RESPONSE_HEADERS = ['X-Request-Id'];
/** Declared, not exposed: a page that gets a 401 reads why in the Error body. */
const NOT_EXPOSED = new Set(['WWW-Authenticate']);

/** What a page may send and read besides the CORS-safelisted headers, from the document. */
function headersOf(paths: ApiPaths): { allowed: string[]; exposed: string[] } {
  const operations = Object.values(paths).flatMap((item) => HTTP_METHODS.flatMap((method) => item[method] ?? []));
  const taken = operations.flatMap(({ parameters = [] }) =>
    parameters.flatMap((parameter) =>
      'in' in parameter && parameter.in === 'header' && parameter.name !== undefined ? [parameter.name] : [],
    ),
  );
  const answered = operations.flatMap(({ responses = {} }) =>
    Object.values(responses).flatMap((response) =>
      response !== undefined && 'headers' in response ? Object.keys(response.headers ?? {}) : [],
    ),
  );
  return {
    allowed: [...new Set([...PLATFORM_REQUEST_HEADERS, ...taken])],
    exposed: [...new Set([...answered, ...PLATFORM_RESPONSE_HEADERS])].filter((name) => !NOT_EXPOSED.has(name)),
  };
}

/** Browsers may keep a preflight's answer this long (Chromium caps it at 2 h). */
const PREFLIGHT_MAX_AGE_SECONDS = 600;

/**
 * The headers browsers act on: helmet's security headers on every answer (Swagger UI at /docs gets
 * a Content-Security-Policy it works under, everything else one that allows nothing), and CORS for
 * the origins of CORS_ORIGINS only. Registered before the routes, so a preflight is answered here,
 * without a key, and never reaches the rate limits.
 */
export function useBrowserHeaders(app: NestExpressApplication, settings: BrowserSettings): void {
  app.use(securityHeaders(settings.servers));
  // Unset: no CORS middleware at all, so the default path does no CORS work.
  if (settings.corsOrigins.length > 0) app.enableCors(corsFor(settings.apiPaths, new Set(settings.corsOrigins)));
}

/** One middleware: helmet's defaults, with the CSP of the page or of an API answer. */
function securityHeaders(servers: string[]) {
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
  const docsHeaders = headersSetBy(forDocs);
  const apiHeaders = headersSetBy(forApi);
  return (request: IncomingMessage, response: ServerResponse, next: () => void): void => {
    const url = request.url ?? '';
    const headers = url === '/docs' || url.startsWith('/docs/') || url.startsWith('/docs?') ? docsHeaders : apiHeaders;
    for (const [name, value] of headers) response.setHeader(name, value);
    next();
  };
}

type Middleware = (request: IncomingMessage, response: ServerResponse, next: (error?: unknown) => void) => void;

/**
 * The headers a helmet middleware sets, read once from a response it is given at start-up: with
 * fixed directives they are the same on every answer, and setting them from a list spares the
 * chain of a dozen middleware calls per request. (Its only other act, removing X-Powered-By,
 * has nothing to remove: Express's own is disabled.)
 */
function headersSetBy(middleware: Middleware): HeaderList {
  const response = new RecordingResponse(new IncomingMessage(new Socket()));
  let failure: unknown = null;
  middleware(response.req, response, (error) => (failure = error ?? null));
  if (failure !== null) throw new Error('helmet refused its own settings', { cause: failure });
  return [...response.recorded.values()];
}

type HeaderList = [name: string, value: number | string | readonly string[]][];

/** A response that keeps each header set on it, spelled as it was set. */
class RecordingResponse extends ServerResponse {
  readonly recorded = new Map<string, HeaderList[number]>();

  override setHeader(name: string, value: number | string | readonly string[]): this {
    this.recorded.set(name.toLowerCase(), [name, value]);
    return super.setHeader(name, value);
  }

  override removeHeader(name: string): void {
    this.recorded.delete(name.toLowerCase());
    super.removeHeader(name);
  }
}

function originOf(server: string): string[] {
  return URL.canParse(server) ? [new URL(server).origin] : [];
}

type CorsCallback = (error: Error | null, options: CorsOptions) => void;

/**
 * CORS for the listed origins, exactly; any other origin (or none) gets no CORS header and its
 * preflight goes on to the routes, which answer it as any unknown method.
 */
function corsFor(apiPaths: BrowserSettings['apiPaths'], origins: Set<string>) {
  let methodsByPath: MethodsByPath | null = null;
  let headers: { allowed: string[]; exposed: string[] } | null = null;
  return (request: Request, callback: CorsCallback): void => {
    const origin = request.headers.origin;
    if (origin === undefined || !origins.has(origin)) return callback(null, { origin: false });
    // The document is complete only once the app is set up: read on the first cross-origin request.
    methodsByPath ??= readMethodsByPath(apiPaths());
    headers ??= headersOf(apiPaths());
    callback(null, {
      origin,
      methods: request.method === 'OPTIONS' ? methodsOf(methodsByPath, request.path) : undefined,
      allowedHeaders: headers.allowed,
      exposedHeaders: headers.exposed,
      maxAge: PREFLIGHT_MAX_AGE_SECONDS,
    });
  };
}

type MethodsByPath = { pattern: RegExp; methods: string[] }[];

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/** The methods each /v1 path serves, from the OpenAPI document (paths there are relative to /v1). */
function readMethodsByPath(paths: ApiPaths): MethodsByPath {
  return Object.entries(paths).map(([template, item]) => {
    const methods = HTTP_METHODS.filter((method) => item[method] !== undefined).map((method) => method.toUpperCase());
    // Express answers HEAD wherever it answers GET.
    if (methods.includes('GET')) methods.push('HEAD');
    const path = template
      .split('/')
      .map((segment) => (/^\{.+\}$/.test(segment) ? '[^/]+' : segment.replace(/[.*+?^$()|[\]\\]/g, '\\$&')))
      .join('/');
    return { pattern: new RegExp(`^${API_PREFIX}${path}$`), methods };
  });
}

/** Outside the operations (the document, health), only reading. */
function methodsOf(methodsByPath: MethodsByPath, path: string): string[] {
  return methodsByPath.find(({ pattern }) => pattern.test(path))?.methods ?? ['GET', 'HEAD'];
}
