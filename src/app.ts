import 'reflect-metadata';
import { NotFoundException } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import { pino, type DestinationStream } from 'pino';
import { AppModule, type AppOptions } from './app.module.js';
import type { LogLevel } from './config.js';
import { NestLogger } from './interface/nest-logger.js';
import { announceGetPetDeprecation } from './interface/http/deprecation.js';
import { answerClientError, answerWithError } from './interface/http/error.filter.js';
import { PetStoreExpressAdapter } from './interface/http/express-adapter.js';
import { HttpMetrics } from './interface/http/metrics.js';
import { buildOpenApiDocument, serveOpenApi } from './interface/http/openapi.js';
import { requestTelemetry } from './interface/http/request-telemetry.js';
import { ShutdownState } from './interface/http/shutdown-state.js';

export type CreateAppOptions = AppOptions & {
  servers: { production: string; staging: string };
  log?: { level: LogLevel; pretty?: boolean; destination?: DestinationStream };
};

/**
 * The single HTTP-stack setup, used by main.ts and by the e2e tests so they cannot drift:
 * /v1 prefix, no global body parser (JSON is read after authentication, see JsonBodyGuard),
 * logs and metrics for every request, OpenAPI document and Swagger UI.
 */
export async function createApp({ servers, log, ...options }: CreateAppOptions): Promise<NestExpressApplication> {
  const logger = createLogger(log ?? { level: 'info' });
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(options), new PetStoreExpressAdapter(), { bodyParser: false, bufferLogs: true });
  app.useLogger(new NestLogger(logger));
  app.disable('x-powered-by');
  // Answers are Cache-Control: no-store; an ETag would only invite 304s that no client may use.
  app.set('etag', false);
  app.getHttpServer().on('clientError', answerClientError);
  const shutdown = app.get(ShutdownState);
  app.use(requestTelemetry(logger, app.get(HttpMetrics)));
  // What a security review expects on every answer; API answers are never stored by caches.
  app.use((request: Request, response: Response, next: NextFunction) => {
    response.setHeader('X-Content-Type-Options', 'nosniff');
    if (request.path.startsWith('/v1/')) {
      response.setHeader('Cache-Control', 'no-store');
      // No validators are sent, so no conditional request can succeed; Express would still answer
      // `If-None-Match: *` with a 304.
      delete request.headers['if-none-match'];
      delete request.headers['if-modified-since'];
    }
    // While draining for shutdown, clients must not reuse the connection.
    if (shutdown.draining) response.setHeader('Connection', 'close');
    next();
  });
  app.use(announceGetPetDeprecation);
  app.setGlobalPrefix('v1', { exclude: ['healthz', 'readyz', 'metrics'] });
  serveOpenApi(app, buildOpenApiDocument(app, servers));
  await app.init();
  // Nest answers unknown paths only under its /v1 prefix: everywhere else, an unknown path or a
  // stray error still gets the Error body instead of Express's HTML page.
  app.use((request: Request, response: Response) => answerWithError(new NotFoundException(), request, response));
  app.use((error: unknown, request: Request, response: Response, _next: NextFunction) => answerWithError(error, request, response));
  return app;
}

/**
 * JSON lines by default; LOG_FORMAT=pretty for people. Never given a request's headers or body.
 * Written to stdout asynchronously (sonic-boom, flushed at exit), in writes of at least 4 KiB or
 * once a second, whichever comes first: a synchronous write per request line was ~15% of a
 * request in the profile, and an asynchronous write per line still ~4%.
 */
function createLogger({ level, pretty, destination }: NonNullable<CreateAppOptions['log']>) {
  if (pretty) return pino({ level, transport: { target: 'pino-pretty', options: { colorize: false } } });
  return pino({ level }, destination ?? pino.destination({ dest: 1, sync: false, minLength: 4096, periodicFlush: 1000 }));
}
