import { type NestApplicationOptions, NotFoundException } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import { Logger } from 'nestjs-pino';
import { AppModule } from './app.module.js';
import { announceGetPetDeprecation } from './interface/http/pets/deprecation.js';
import { buildOpenApiDocument } from './interface/http/pets/api-document.js';
import { openApiDocumentOf, serveOpenApi } from './interface/http/platform/openapi-document.js';
import { answerHeaders } from './interface/http/platform/answer-headers.js';
import { useBrowserHeaders } from './interface/http/platform/browser-headers.js';
import { answerWithError } from './interface/http/platform/error.filter.js';
import {
  answerNodeProtocol,
  createExpressAdapter,
  requireHostHeader,
} from './interface/http/platform/node-protocol.js';
import { HttpMetrics, observeRequests } from './interface/http/platform/metrics.js';
import { type Config, petstoreConfig } from './infrastructure/platform/config.js';
import { ShutdownState } from './interface/http/platform/shutdown-state.js';
import { BearerKeyMiddleware } from './interface/http/access/bearer-key.middleware.js';
import { assignRequestId } from './interface/http/platform/logging.js';
import { authenticateApiPaths, RefusedRequestsLog } from './interface/http/platform/refused-requests-log.js';
import { API_PREFIX } from './interface/http/platform/api-prefix.js';

export { createExpressAdapter };

/**
 * No global body parser: JSON is read after authentication (JsonBodyGuard, on the route). Nest's
 * own start-up lines wait for the pino logger; a failed start prints nothing of Nest's and throws,
 * so that main.ts reports it as one line (Nest would otherwise abort the process).
 */
export const APP_OPTIONS: NestApplicationOptions = {
  bodyParser: false,
  bufferLogs: true,
  autoFlushLogs: false,
  abortOnError: false,
};

export async function createApp(): Promise<NestExpressApplication> {
  return configureApp(await NestFactory.create<NestExpressApplication>(AppModule, createExpressAdapter(), APP_OPTIONS));
}

/**
 * The single HTTP-stack setup, used by main.ts and by the e2e tests so they cannot drift. Each
 * step is one call; what it does is in the module it names. Middleware runs in this order.
 */
export async function configureApp(app: NestExpressApplication): Promise<NestExpressApplication> {
  app.useLogger(app.get(Logger));
  app.flushLogs();
  const config = app.get<Config>(petstoreConfig.KEY);
  const servers = { production: config.publicBaseUrl ?? API_PREFIX, staging: config.stagingBaseUrl ?? API_PREFIX };
  useExpressSettings(app, config);
  answerNodeProtocol(app.getHttpServer());
  app.use(observeRequests(app.get(HttpMetrics)));
  useBrowserHeaders(app, {
    corsOrigins: config.corsOrigins,
    servers: [servers.production, servers.staging],
    apiPaths: () => openApiDocumentOf(app).paths,
  });
  app.use(requireHostHeader);
  app.use(answerHeaders(app.get(ShutdownState)));
  app.use(announceGetPetDeprecation);
  app.use(assignRequestId);
  // Every path under /v1 needs a key. Checked before any route is looked for (and before the
  // request log and Nest's own middleware), so that a refusal costs as little as it can; what is
  // refused is answered here, and counted in the refused-requests log (docs/security.md).
  const bearerKeys = app.get(BearerKeyMiddleware);
  app.use(authenticateApiPaths(bearerKeys.use.bind(bearerKeys), app.get(RefusedRequestsLog)));
  app.setGlobalPrefix(API_PREFIX, { exclude: ['healthz', 'readyz', 'metrics'] });
  serveOpenApi(app, buildOpenApiDocument(app, servers));
  await app.init();
  answerWhatNoRouteAnswers(app);
  return app;
}

function useExpressSettings(app: NestExpressApplication, config: Config): void {
  app.disable('x-powered-by');
  // TRUSTED_PROXIES: `request.ip` (what the failed-authentication limit counts by) is then the
  // address a trusted proxy put in X-Forwarded-For, read from the right up to the first address
  // not trusted, so a client cannot forge its way past the balancer. None: the socket's peer, and
  // no header is believed.
  if (config.trustedProxies.length > 0) app.set('trust proxy', config.trustedProxies);
  // Answers are Cache-Control: no-store; an ETag would only invite 304s that no client may use.
  app.set('etag', false);
}

/**
 * Nest answers unknown paths only under its /v1 prefix: everywhere else, an unknown path or a
 * stray error still gets the Error body instead of Express's HTML page.
 */
function answerWhatNoRouteAnswers(app: NestExpressApplication): void {
  app.use((request: Request, response: Response) => answerWithError(new NotFoundException(), request, response));
  // Four parameters make it Express's error handler. An answer already under way cannot become an
  // Error body: Express's own handler then closes the connection, so the client sees it failed.
  app.use((error: unknown, request: Request, response: Response, next: NextFunction) => {
    if (response.headersSent) next(error);
    else answerWithError(error, request, response);
  });
}
