import { type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { errorBody, errorBodyHeaders, writeErrorBody } from './error.filter.js';

/** No middleware ran for these answers, and the connection closes after them. */
const CLOSING_HEADERS = { 'X-Content-Type-Options': 'nosniff', Connection: 'close' };

/** An Error body as raw HTTP/1.1, for a socket Node's HTTP server no longer writes on. */
export function rawErrorResponse(status: number, message: string, head = false): string {
  const json = JSON.stringify(errorBody(status, message));
  const fields = Object.entries({ ...errorBodyHeaders(json), ...CLOSING_HEADERS });
  const headers = fields.map(([name, value]) => `${name}: ${value}\r\n`).join('');
  return `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n${headers}\r\n${head ? '' : json}`;
}

/** An Error body through a response Node created before Express saw the request. */
export function answerRaw(response: ServerResponse, status: number, message: string): void {
  writeErrorBody(response, errorBody(status, message), CLOSING_HEADERS);
}

/**
 * Node's HTTP parser refuses some requests before any route sees them (unknown method, bytes not
 * allowed in a path or header, conflicting Content-Length, header section over 16 KiB). Answer
 * those with the Error body too, not Node's bare 400.
 */
export function answerClientError(
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
export function afterPendingAnswer(
  socket: Duplex,
  lastResponse: ServerResponse | undefined,
  answer: () => string,
): void {
  // A socket handed over has no error listener of Node's any more: an error must not stop the process.
  socket.on('error', () => socket.destroy());
  // An answer that said Connection: close was the last word on this connection.
  const write = () =>
    socket.writable && lastResponse?.shouldKeepAlive !== false ? socket.end(answer()) : socket.destroy();
  if (lastResponse !== undefined && !lastResponse.writableFinished) lastResponse.once('finish', write);
  else write();
}
