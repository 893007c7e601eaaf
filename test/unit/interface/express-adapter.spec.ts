import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ExpressAdapter } from '@nestjs/platform-express';
import type express from 'express';
import { PetStoreExpressAdapter } from '../../../src/interface/http/express-adapter.js';

/**
 * Serves one route through the adapter's own server and reports the prototypes a request and its
 * response have when the server hands them over, before Express's `app.handle` re-parents them.
 */
async function prototypesOnArrival(adapter: ExpressAdapter): Promise<{ request: object; response: object; app: express.Express; body: unknown }> {
  adapter.initHttpServer({});
  const app = adapter.getInstance<express.Express>();
  app.get('/echo', (request, response) => {
    response.json({ header: request.get('x-probe'), path: request.path });
  });
  const server = adapter.getHttpServer() as Server;
  let arrived: { request: object; response: object } | undefined;
  server.prependListener('request', (request: IncomingMessage, response: ServerResponse) => {
    arrived = { request: Object.getPrototypeOf(request) as object, response: Object.getPrototypeOf(response) as object };
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const answer = await fetch(`http://127.0.0.1:${port}/echo`, { headers: { 'x-probe': 'yes' } });
    if (!arrived) throw new Error('the server saw no request');
    return { ...arrived, app, body: await answer.json() };
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

describe('PetStoreExpressAdapter', () => {
  it("builds requests and responses with Express's prototypes, so Express's setPrototypeOf changes nothing", async () => {
    const { request, response, app, body } = await prototypesOnArrival(new PetStoreExpressAdapter());

    expect(request).toBe(app.request);
    expect(response).toBe(app.response);
    // Express's own methods (request.get, response.json) still work.
    expect(body).toEqual({ header: 'yes', path: '/echo' });
  });

  it("differs from Nest's stock adapter, whose objects arrive as plain Node ones", async () => {
    const { request, app } = await prototypesOnArrival(new ExpressAdapter());

    expect(request).not.toBe(app.request);
  });
});
