import { createServer, type IncomingMessage, type Server, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { ExpressAdapter } from '@nestjs/platform-express';
import express from 'express';
import { errorBody, errorBodyHeaders, writeErrorBody } from './error-body.js';

/**
 * Nest's Express adapter, on a Node server that lets a request without Host through: Node would
 * answer it with an empty 400 of its own; requireHostHeader() answers it with the Error body.
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

/**
 * What Node answers on its own, before any route (a request its parser refuses, `Expect`,
 * CONNECT), gets the Error body too; `Expect: 100-continue` is left to the route.
 */
export function answerNodeProtocol(server: Server): void {
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
}

/** HTTP/1.1 requires Host (RFC 9112, 3.2): without it, a 400 Error body, and the connection closes. */
export function requireHostHeader(request: IncomingMessage, response: ServerResponse, next: () => void): void {
  if (request.httpVersion === '1.1' && request.headers.host === undefined) {
    response.setHeader('Connection', 'close');
    writeErrorBody(response, errorBody(400, 'Host header is required in HTTP/1.1'), {});
    return;
  }
  next();
}

/** No middleware ran for these answers, and the connection closes after them. */
const CLOSING_HEADERS = { 'X-Content-Type-Options': 'nosniff', Connection: 'close' };

/** An Error body as raw HTTP/1.1, for a socket Node's HTTP server no longer writes on. */
function rawErrorResponse(status: number, message: string, head = false): string {
  const json = JSON.stringify(errorBody(status, message));
  const fields = Object.entries({ ...errorBodyHeaders(json), ...CLOSING_HEADERS });
  const headers = fields.map(([name, value]) => `${name}: ${value}\r\n`).join('');
  return `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n${headers}\r\n${head ? '' : json}`;
}

/** An Error body through a response Node created before Express saw the request. */
function answerRaw(response: ServerResponse, status: number, message: string): void {
  writeErrorBody(response, errorBody(status, message), CLOSING_HEADERS);
}

/**
 * Node's HTTP parser refuses some requests before any route sees them (unknown method, bytes not
 * allowed in a path or header, conflicting Content-Length, header section over 16 KiB). Answer
 * those with the Error body too, not Node's bare 400.
 */
function answerClientError(
  error: Error & { code?: string },
  socket: Duplex,
  lastResponse: ServerResponse | undefined,
): void {
  if (!socket.writable || error.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const [status, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request header section exceeds 16 KiB']
      : [400, 'Malformed HTTP request'];
  if (lastResponse !== undefined && !lastResponse.writableFinished) {
    // The parser failed inside that request's own body (its framing): it will never be read to
    // its end, so it is answered now, and the connection closed.
    if (!lastResponse.req.complete && !lastResponse.headersSent) {
      const answer = () => {
        if (!socket.writable) return;
        // Destroyed once written: the request's reader then fails and lets go of it.
        socket.once('finish', () => socket.destroy());
        socket.end(rawErrorResponse(400, 'Malformed request body framing (Transfer-Encoding or chunk sizes)'));
      };
      // In turn: a response queued behind others on the connection gets the socket when they are out.
      if (lastResponse.socket === null) lastResponse.once('socket', answer);
      else answer();
      return;
    }
    // Bytes behind a request whose answer is not out yet are not a request of their own: answer
    // that request, say it closes the connection, then close, rather than add an answer the client
    // never asked for. (Once an answer is out, what comes next is a new request, answered below.)
    if (!lastResponse.headersSent) lastResponse.setHeader('Connection', 'close');
    lastResponse.once('finish', () => socket.end());
    return;
  }
  // An answer to HEAD has no body, or the client would read it as the next response. The bytes
  // at hand start with the refused request only when it was the connection's first.
  const head =
    lastResponse === undefined &&
    'rawPacket' in error &&
    Buffer.isBuffer(error.rawPacket) &&
    error.rawPacket.subarray(0, 5).toString('latin1') === 'HEAD ';
  socket.end(rawErrorResponse(status, message, head));
}

/**
 * Writes `answer()` on a socket Node handed over (CONNECT) once the answer still due on it is out,
 * then closes it. Nothing is written on a socket already closed, or that that answer closed.
 */
function afterPendingAnswer(socket: Duplex, lastResponse: ServerResponse | undefined, answer: () => string): void {
  // A socket handed over has no error listener of Node's any more: an error must not stop the process.
  socket.on('error', () => socket.destroy());
  // An answer that said Connection: close was the last word on this connection.
  const write = () =>
    socket.writable && lastResponse?.shouldKeepAlive !== false ? socket.end(answer()) : socket.destroy();
  if (lastResponse !== undefined && !lastResponse.writableFinished) lastResponse.once('finish', write);
  else write();
}
