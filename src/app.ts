import 'reflect-metadata';
import { type LogLevel, NotFoundException } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import { AppModule, type AppOptions } from './app.module.js';
import { announceGetPetDeprecation } from './interface/http/deprecation.js';
import { answerWithError } from './interface/http/error.filter.js';
import { buildOpenApiDocument, serveOpenApi } from './interface/http/openapi.js';

export type CreateAppOptions = AppOptions & {
  servers: { production: string; staging: string };
  logLevels?: LogLevel[];
};

/**
 * The single HTTP-stack setup, used by main.ts and by the e2e tests so they cannot drift:
 * /v1 prefix, no global body parser (JSON is read after authentication, see JsonBodyInterceptor),
 * OpenAPI document and Swagger UI.
 */
export async function createApp({ servers, logLevels, ...options }: CreateAppOptions): Promise<NestExpressApplication> {
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(options), {
    bodyParser: false,
    logger: logLevels ?? ['log', 'warn', 'error', 'fatal'],
  });
  app.disable('x-powered-by');
  // What a security review expects on every answer; API answers are never stored by caches.
  app.use((request: Request, response: Response, next: NextFunction) => {
    response.setHeader('X-Content-Type-Options', 'nosniff');
    if (request.path.startsWith('/v1/')) response.setHeader('Cache-Control', 'no-store');
    next();
  });
  app.use(announceGetPetDeprecation);
  app.setGlobalPrefix('v1', { exclude: ['healthz', 'readyz'] });
  serveOpenApi(app, buildOpenApiDocument(app, servers));
  await app.init();
  // Nest answers unknown paths only under its /v1 prefix: everywhere else, an unknown path or a
  // stray error still gets the Error body instead of Express's HTML page.
  app.use((request: Request, response: Response) => answerWithError(new NotFoundException(), request, response));
  app.use((error: unknown, request: Request, response: Response, _next: NextFunction) => answerWithError(error, request, response));
  return app;
}
