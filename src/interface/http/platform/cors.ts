import type { CorsOptions, CorsOptionsDelegate } from '@nestjs/common/interfaces/external/cors-options.interface.js';
import type { OpenAPIObject } from '@nestjs/swagger';
import type { Request } from 'express';
import { API_PREFIX } from './api-prefix.js';

type ApiPaths = OpenAPIObject['paths'];

/** Request headers of the platform's own: the key, the body's type, the request id of the log. */
const PLATFORM_REQUEST_HEADERS = ['Authorization', 'Content-Type', 'X-Request-Id'];
/** Response headers of the platform's own (the request log's id), besides those the operations declare. */
const PLATFORM_RESPONSE_HEADERS = ['X-Request-Id'];
/** Declared, not exposed: a page that gets a 401 reads why in the Error body. */
const NOT_EXPOSED = new Set(['WWW-Authenticate']);
/** Browsers may keep a preflight's answer this long (Chromium caps it at 2 h). */
const PREFLIGHT_MAX_AGE_SECONDS = 600;

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/**
 * CORS for the origins of CORS_ORIGINS, exactly, as Nest's `enableCors` takes it (the `cors`
 * package's per-request options): any other origin (or none) gets no CORS header, and its
 * preflight goes on to the routes, which answer it as any unknown method. A preflight may use the
 * methods of its path, and a page may send and read the headers the operations declare: both
 * read from the OpenAPI document's paths (relative to the API prefix).
 */
export function corsOptions(apiPaths: ApiPaths, origins: string[]): CorsOptionsDelegate<Request> {
  const allowed = new Set(origins);
  const methodsByPath = readMethodsByPath(apiPaths);
  const headers = headersOf(apiPaths);
  return (request: Request, callback: (error: Error | null, options: CorsOptions) => void): void => {
    const origin = request.headers.origin;
    if (origin === undefined || !allowed.has(origin)) return callback(null, { origin: false });
    callback(null, {
      origin,
      methods: request.method === 'OPTIONS' ? methodsOf(methodsByPath, request.path) : undefined,
      allowedHeaders: headers.allowed,
      exposedHeaders: headers.exposed,
      maxAge: PREFLIGHT_MAX_AGE_SECONDS,
    });
  };
}

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

type MethodsByPath = { pattern: RegExp; methods: string[] }[];

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
