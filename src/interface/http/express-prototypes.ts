import http from 'node:http';
import type express from 'express';

/**
 * Options for Node's HTTP server: request and response classes whose instances are born with
 * `app`'s Express prototypes (which keep Node's in their chain), made the prototypes Express
 * sets. Express's per-request `Object.setPrototypeOf` then changes nothing; see
 * PetStoreExpressAdapter for what that call costs on Node 20.
 */
export function prebuiltPrototypes(app: express.Express): http.ServerOptions {
  class ExpressRequest extends http.IncomingMessage {}
  class ExpressResponse extends http.ServerResponse {}
  Object.setPrototypeOf(ExpressRequest.prototype, app.request);
  Object.setPrototypeOf(ExpressResponse.prototype, app.response);
  app.request = ExpressRequest.prototype as express.Request;
  app.response = ExpressResponse.prototype as express.Response;
  return { IncomingMessage: ExpressRequest, ServerResponse: ExpressResponse as typeof http.ServerResponse };
}
