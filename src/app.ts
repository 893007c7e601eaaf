import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { type NestApplicationOptions, NotFoundException } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter, type NestExpressApplication } from '@nestjs/platform-express';
import express from 'express';
import type { NextFunction, Request, Response } from 'express';
import { Logger } from 'nestjs-pino';
import { AppModule } from './app.module.js';
import { type Config, petstoreConfig } from './platform/process/config.js';
import { ApiError } from './platform/http/api-error.js';
import { announceGetPetDeprecation } from './pets/deprecation.js';
import { answerWithError } from './platform/http/error.filter.js';
import { HttpMetrics, observeRequests } from './platform/observability/metrics.js';
import { useBrowserHeaders } from './platform/http/browser-headers.js';
import { buildOpenApiDocument, openApiDocumentOf, serveOpenApi } from './pets/openapi.js';
import { afterPendingAnswer, answerClientError, answerRaw, rawErrorResponse } from './platform/http/node-protocol.js';
import { ShutdownState } from './platform/process/shutdown-state.js';

/**
 * No global body parser: JSON is read after authentication (JsonBodyGuard). Nest's own start-up
 * lines wait for the pino logger; a failed start prints nothing of Nest's and throws, so that
 * main.ts reports it as one line (Nest would otherwise abort the process).
 */
export const APP_OPTIONS: NestApplicationOptions = {
  bodyParser: false,
  bufferLogs: true,
  autoFlushLogs: false,
  abortOnError: false,
};

/**
 * Nest's Express adapter, on a Node server that lets a request without Host through: Node would
 * answer it with an empty 400 of its own, the middleware below answers it with the Error body.
 * `initHttpServer` is the adapter's hook for creating the server (Nest's HttpServer contract);
 * ExpressAdapter's own passes no options to `http.createServer`. Of the application options it
 * honours (httpsOptions, forceCloseConnections, return503OnClosing), APP_OPTIONS sets none.
 */
class ExpressAdapterWithoutHostCheck extends ExpressAdapter {
  override initHttpServer(): void {
    this.setHttpServer(createServer({ requireHostHeader: false }, this.getInstance<express.Express>()));
  }
}

/**
 * Routes match case exactly: `/V1/PETS` is a 404, not `/v1/pets` without the headers the `/v1`
 * middleware sets. Set on the Express app before Nest registers anything on it.
 */
export function createExpressAdapter(): ExpressAdapter {
  return new ExpressAdapterWithoutHostCheck(express().enable('case sensitive routing'));
}

export async function createApp(): Promise<NestExpressApplication> {
  return configureApp(await NestFactory.create<NestExpressApplication>(AppModule, createExpressAdapter(), APP_OPTIONS));
}

/**
 * The single HTTP-stack setup, used by main.ts and by the e2e tests so they cannot drift:
 * /v1 prefix, security headers, metrics, the OpenAPI document and Swagger UI, and the Error body
 * for whatever no route answers.
 */
export async function configureApp(app: NestExpressApplication): Promise<NestExpressApplication> {
  app.useLogger(app.get(Logger));
  app.flushLogs();
  const config = app.get<Config>(petstoreConfig.KEY);
  app.disable('x-powered-by');
  // TRUSTED_PROXIES: `request.ip` (what the failed-authentication limit counts by) is then the
  // address a trusted proxy put in X-Forwarded-For, read from the right up to the first address
  // not trusted, so a client cannot forge its way past the balancer. None: the socket's peer, and
  // no header is believed.
  if (config.trustedProxies.length > 0) app.set('trust proxy', config.trustedProxies);
  // Answers are Cache-Control: no-store; an ETag would only invite 304s that no client may use.
  app.set('etag', false);
  const server: Server = app.getHttpServer();
  // What Node answers on its own, before any route, gets the Error body too.
  const lastResponses = new WeakMap<object, ServerResponse>();
  server.on('request', (request: IncomingMessage, response: ServerResponse) =>
    lastResponses.set(request.socket, response),
  );
  server.on('clientError', (error: Error, socket: Duplex) =>
    answerClientError(error, socket, lastResponses.get(socket)),
  );
  // Answered through its own response, so that it goes out in turn behind requests pipelined ahead of it.
  server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
    lastResponses.set(request.socket, response);
    answerRaw(response, 417, 'Expect header: only 100-continue is supported');
  });
  // CONNECT takes the socket over: the refusal waits for the answer still due on it, if any.
  server.on('connect', (request: IncomingMessage, socket: Duplex) =>
    afterPendingAnswer(socket, lastResponses.get(request.socket), () =>
      rawErrorResponse(405, 'CONNECT is not supported'),
    ),
  );
  // Node would answer every `Expect: 100-continue` with 100 Continue before any check; the JSON
  // body guard sends it only for a body it is about to read (after authentication and the size check).
  server.on('checkContinue', (request: unknown, response: unknown) => server.emit('request', request, response));
  const shutdown = app.get(ShutdownState);
  app.use(observeRequests(app.get(HttpMetrics)));
  useBrowserHeaders(app, {
    corsOrigins: config.corsOrigins,
    servers: [config.publicBaseUrl, config.stagingBaseUrl],
    apiPaths: () => openApiDocumentOf(app).paths,
  });
  // API answers are never stored by caches.
  app.use((request: Request, response: Response, next: NextFunction) => {
    if (request.httpVersion === '1.1' && request.headers.host === undefined) {
      response.setHeader('Connection', 'close');
      answerWithError(new ApiError(400, 'Host header is required in HTTP/1.1'), request, response);
      return;
    }
    if (request.path.startsWith('/v1/')) {
      response.setHeader('Cache-Control', 'no-store');
      // No validators are sent, so no conditional request can succeed; Express would still answer
      // `If-None-Match: *` with a 304.
      delete request.headers['if-none-match'];
      delete request.headers['if-modified-since'];
    }
    // Once the server stops accepting, a client must not send another request on this connection.
    if (shutdown.closing) response.setHeader('Connection', 'close');
    next();
  });
  app.use(announceGetPetDeprecation);
  app.setGlobalPrefix('v1', { exclude: ['healthz', 'readyz', 'metrics'] });
  serveOpenApi(app, buildOpenApiDocument(app, { production: config.publicBaseUrl, staging: config.stagingBaseUrl }));
  await app.init();
  // Nest answers unknown paths only under its /v1 prefix: everywhere else, an unknown path or a
  // stray error still gets the Error body instead of Express's HTML page.
  app.use((request: Request, response: Response) => answerWithError(new NotFoundException(), request, response));
  // Four parameters make it Express's error handler. An answer already under way cannot become an
  // Error body: Express's own handler then closes the connection, so the client sees it failed.
  app.use((error: unknown, request: Request, response: Response, next: NextFunction) => {
    if (response.headersSent) next(error);
    else answerWithError(error, request, response);
  });
  return app;
}
