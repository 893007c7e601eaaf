import http from 'node:http';
import type { NestApplicationOptions } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import express from 'express';
import { prebuiltPrototypes } from './express-prototypes.js';

/**
 * Nest's Express adapter, with one change: its HTTP server builds each request and response with
 * Express's prototypes already in place.
 *
 * Express re-parents every request and response with `Object.setPrototypeOf` (application.js,
 * `app.handle`). On Node 20 (V8 11.3) that call is expensive, and it keeps what each request
 * allocates alive past two young-generation collections: about 12 KB a request is promoted and
 * left for full collections. That grew the old generation to four times the live heap (RSS over
 * 240 MiB under load), and a one-route Express app answered 7,300 requests/s instead of
 * 26,000-37,000 (see "Memory" in the README). Built with the right prototype, the object is left
 * as it is: V8 ignores a setPrototypeOf to the prototype it already has. Node 24 shows neither cost.
 */
export class PetStoreExpressAdapter extends ExpressAdapter {
  constructor() {
    super(express());
  }

  override initHttpServer(options: NestApplicationOptions): void {
    // HTTPS and Nest's connection tracking stay Nest's own; this service uses neither.
    if (options.httpsOptions || options.forceCloseConnections || options.return503OnClosing) {
      super.initHttpServer(options);
      return;
    }
    const app = this.getInstance<express.Express>();
    this.httpServer = http.createServer(prebuiltPrototypes(app), app);
  }
}
