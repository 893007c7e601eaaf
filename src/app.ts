import type { NestApplicationOptions } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Logger } from 'nestjs-pino';
import { AppModule } from './app.module.js';
import { type Config, petstoreConfig } from './infrastructure/platform/config.js';
import { authenticateApiPaths } from './interface/http/access/authenticate-api-paths.js';
import { BearerKeyMiddleware } from './interface/http/access/bearer-key.middleware.js';
import { buildOpenApiDocument } from './interface/http/pets/api-document.js';
import { announceGetPetDeprecation } from './interface/http/pets/deprecation.js';
import { answerHeaders } from './interface/http/platform/answer-headers.js';
import { API_PREFIX } from './interface/http/platform/api-prefix.js';
import { corsOptions } from './interface/http/platform/cors.js';
import { assignRequestId } from './interface/http/platform/logging.js';
import { HttpMetrics } from './interface/http/platform/metrics.js';
import {
  answerNodeProtocol,
  createExpressAdapter,
  requireHostHeader,
} from './interface/http/platform/node-protocol.js';
import { serveOpenApi } from './interface/http/platform/openapi-document.js';
import { RefusedRequestsLog } from './interface/http/platform/refused-requests-log.js';
import { observeRequests } from './interface/http/platform/request-metrics.js';
import { securityHeaders } from './interface/http/platform/security-headers.js';
import { ShutdownState } from './interface/http/platform/shutdown-state.js';
import { answerUnhandled, answerUnrouted } from './interface/http/platform/unrouted.js';

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

/** The one HTTP stack, for main.ts and the e2e tests alike: one call a step, middleware in the order it runs. */
export async function configureApp(app: NestExpressApplication): Promise<NestExpressApplication> {
  app.useLogger(app.get(Logger));
  app.flushLogs();
  const config = app.get<Config>(petstoreConfig.KEY);
  const servers = { production: config.publicBaseUrl ?? API_PREFIX, staging: config.stagingBaseUrl ?? API_PREFIX };
  const document = buildOpenApiDocument(app, servers);
  useExpressSettings(app, config);
  answerNodeProtocol(app.getHttpServer());
  app.use(observeRequests(app.get(HttpMetrics)));
  app.use(securityHeaders([servers.production, servers.staging]));
  // Unset: no CORS middleware at all. Preflights are answered here, before authentication.
  if (config.corsOrigins.length > 0) app.enableCors(corsOptions(document.paths, config.corsOrigins));
  app.use(requireHostHeader);
  app.use(answerHeaders(app.get(ShutdownState)));
  app.use(announceGetPetDeprecation);
  app.use(assignRequestId);
  // A key on every path under /v1, before any route, log or Nest middleware: refusals cost least (docs/security.md).
  app.use(authenticateApiPaths(app.get(BearerKeyMiddleware), app.get(RefusedRequestsLog)));
  app.setGlobalPrefix(API_PREFIX, { exclude: ['healthz', 'readyz', 'metrics'] });
  serveOpenApi(app, document);
  await app.init();
  // Behind every route: the Error body for an unknown path outside /v1, and for a stray error.
  app.use(answerUnrouted, answerUnhandled);
  return app;
}

function useExpressSettings(app: NestExpressApplication, config: Config): void {
  app.disable('x-powered-by');
  // TRUSTED_PROXIES: `request.ip`, which failed authentications count by, is then what they forwarded.
  if (config.trustedProxies.length > 0) app.set('trust proxy', config.trustedProxies);
  // Answers are Cache-Control: no-store; an ETag would only invite 304s that no client may use.
  app.set('etag', false);
}
