import { expect } from '@jest/globals';
import { createServer, type ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { BadRequestException, HttpException, Logger, type LoggerService, NotFoundException } from '@nestjs/common';
import { PetNotFoundError } from '../../../../../src/domain/pets/pet.js';
import { ApiError } from '../../../../../src/interface/http/platform/api-error.js';
import { errorBody } from '../../../../../src/interface/http/platform/error-body.js';
import { answerWithError, toErrorResponse } from '../../../../../src/interface/http/platform/error.filter.js';
import { StoreUnavailableError } from '../../../../../src/application/platform/store-unavailable-error.js';

const request = { method: 'GET', originalUrl: '/v1/somewhere?x=1' };

describe('toErrorResponse', () => {
  it('writes an ApiError as it is, with its headers', () => {
    const reply = toErrorResponse(
      new ApiError(401, 'Invalid API key', { 'WWW-Authenticate': 'Bearer realm="petstore"' }),
      request,
    );

    expect(reply).toEqual({
      body: { code: 'unauthorized', message: 'Invalid API key', status: 401 },
      headers: { 'WWW-Authenticate': 'Bearer realm="petstore"' },
    });
  });

  it('answers a store that does not answer with 503 and Retry-After', () => {
    expect(toErrorResponse(new StoreUnavailableError(), request)).toEqual({
      body: { code: 'unavailable', message: expect.stringContaining('database'), status: 503 },
      headers: { 'Retry-After': '5' },
    });
  });

  it('knows none of the product errors: they reach it as ApiErrors (PetErrorsFilter)', () => {
    expect(toErrorResponse(new PetNotFoundError(7), request).body.status).toBe(500);
  });

  it('answers an unknown route with not_found naming the path', () => {
    expect(toErrorResponse(new NotFoundException(), request).body).toEqual({
      code: 'not_found',
      message: 'No route for GET /v1/somewhere',
      status: 404,
    });
  });

  it('names a path the Express router cannot decode', () => {
    const error = Object.assign(new URIError("Failed to decode param '%ff'"), { status: 400, statusCode: 400 });

    expect(toErrorResponse(error, request).body).toEqual({
      code: 'invalid_request',
      message: 'Request path is not valid percent-encoded UTF-8',
      status: 400,
    });
  });

  it('maps another client error of the framework by its status, with a message that reveals nothing', () => {
    expect(toErrorResponse(new HttpException('Method Not Allowed', 405), request).body).toEqual({
      code: 'method_not_allowed',
      message: 'Invalid request',
      status: 405,
    });
  });

  it('turns anything else into a 500 that reveals nothing', () => {
    const reply = toErrorResponse(
      new Error('duplicate key value violates unique constraint "pets_pkey" SELECT * FROM pets'),
      request,
    );

    expect(reply).toEqual({
      body: { code: 'internal_error', message: 'Internal server error', status: 500 },
      headers: {},
    });
  });

  it('does not trust a 5xx status on a foreign error', () => {
    expect(toErrorResponse(Object.assign(new Error('secret detail'), { status: 502 }), request).body).toEqual({
      code: 'internal_error',
      message: 'Internal server error',
      status: 500,
    });
  });
});

describe('errorBody', () => {
  it.each([
    [401, 'unauthorized'],
    [417, 'invalid_request'],
    [431, 'invalid_request'],
    [499, 'invalid_request'],
    [500, 'internal_error'],
    [502, 'internal_error'],
    [503, 'unavailable'],
  ])('gives status %i the code %s', (status, code) => {
    expect(errorBody(status, 'm')).toEqual({ code, message: 'm', status });
  });
});

/** What http-errors builds (raw-body, send, serve-static use it): an Error marked `expose` for a 4xx. */
function httpError(status: number, message = 'from a library'): Error {
  return Object.assign(new Error(message), { status, statusCode: status, expose: status < 500 });
}

/** What the Express router throws for a path parameter that is not percent-encoded UTF-8. */
function routerDecodeError(): URIError {
  return Object.assign(new URIError("Failed to decode param '%E0'"), { status: 400, statusCode: 400 });
}

describe('toErrorResponse on what others throw', () => {
  it.each([
    ['an http-errors 400', httpError(400), 400],
    ['an http-errors 416', httpError(416), 416],
    ['an exposed status given as statusCode only', { statusCode: 405, expose: true }, 405],
    ['an exposed 499', { status: 499, expose: true }, 499],
    [
      "Nest's HttpException made of an http-errors 416",
      new HttpException('Range', 416, { cause: httpError(416) }),
      416,
    ],
    ['an http-errors 500', httpError(500), 500],
    ['an exposed 5xx', { status: 502, expose: true }, 500],
    ['an exposed 3xx', { status: 304, expose: true }, 500],
    ['an exposed status that is not an integer', { status: 404.5, expose: true }, 500],
    ['an exposed status that is a string', { status: '404', expose: true }, 500],
    ['null', null, 500],
    ['a string', 'status', 500],
  ])('answers %s with the status it may tell', (_what, exception, status) => {
    expect(toErrorResponse(exception, request).body.status).toBe(status);
  });

  it.each([
    ["a dependency's error that carries status 404", Object.assign(new Error('no such row'), { status: 404 })],
    ['an object with a 4xx status', { status: 499 }],
    ['a 4xx given as statusCode', { statusCode: 400 }],
    ['an http-errors 4xx marked not for the client', Object.assign(httpError(409), { expose: false })],
    ['a 4xx whose expose is only truthy', { status: 400, expose: 'true' }],
    [
      "Nest's HttpException made of an http-errors 4xx marked not for the client",
      new HttpException('Conflict', 409, { cause: Object.assign(httpError(409), { expose: false }) }),
    ],
  ])('answers %s, which does not say it is meant for the client, with a 500', (_what, exception) => {
    expect(toErrorResponse(exception, request)).toEqual({
      body: { code: 'internal_error', message: 'Internal server error', status: 500 },
      headers: {},
    });
  });

  it('gives a client error of a library a message that reveals nothing', () => {
    expect(toErrorResponse(httpError(409, 'row 7 locked'), request).body).toEqual({
      code: 'idempotency_conflict',
      message: 'Invalid request',
      status: 409,
    });
  });

  it('names a path without its query, cut at 200 characters', () => {
    const long = `/${'a'.repeat(300)}`;

    expect(toErrorResponse(httpError(404), { method: 'PUT', originalUrl: '/x?secret=1' }).body.message).toBe(
      'No route for PUT /x',
    );
    expect(toErrorResponse(new NotFoundException(), { method: 'GET', originalUrl: long }).body.message).toBe(
      `No route for GET ${long.slice(0, 200)}`,
    );
  });

  it("knows the router's decoding error by name, though it is not marked for the client", () => {
    expect(routerDecodeError()).not.toHaveProperty('expose');
    expect(toErrorResponse(routerDecodeError(), request)).toEqual({
      body: { code: 'invalid_request', message: 'Request path is not valid percent-encoded UTF-8', status: 400 },
      headers: {},
    });
  });

  it("knows it too as Nest's ExpressAdapter hands it on a Nest route: the cause of a BadRequestException", () => {
    const mapped = new BadRequestException(routerDecodeError().message, { cause: routerDecodeError() });

    expect(toErrorResponse(mapped, request).body.message).toBe('Request path is not valid percent-encoded UTF-8');
    expect(toErrorResponse(new BadRequestException('Failed to decode param'), request).body.message).toBe(
      'Invalid request',
    );
  });

  it.each([
    ['a URIError of its own, without the status', new URIError("Failed to decode param '%E0'")],
    ['a URIError with another message', Object.assign(new URIError('URI malformed'), { status: 400 })],
    [
      'an Error with the words, not a URIError',
      Object.assign(new Error("Failed to decode param '%E0'"), { status: 400 }),
    ],
    [
      'a URIError whose message only contains the words',
      Object.assign(new URIError("Parameter: Failed to decode param '%ff'"), { status: 400 }),
    ],
  ])('does not take %s for the decoding error', (_what, exception) => {
    expect(toErrorResponse(exception, request).body.status).toBe(500);
  });
});

/** What a logger received: level, message and the rest. */
class RecordingLogger implements LoggerService {
  readonly lines: { level: string; message: unknown; rest: unknown[] }[] = [];

  log(message: unknown, ...rest: unknown[]): void {
    this.lines.push({ level: 'log', message, rest });
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.lines.push({ level: 'error', message, rest });
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.lines.push({ level: 'warn', message, rest });
  }
}

type Answer = { status: number; headers: Headers; text: string };

/**
 * A real local server that answers every request with answerWithError, a turn after it arrived
 * (as the service does, whose guards and handlers are asynchronous), after `prepare` had its go.
 */
async function withServer<T>(
  exception: unknown,
  prepare: (response: ServerResponse) => void,
  use: (url: string) => Promise<T>,
): Promise<T> {
  const server = createServer((request, response) => {
    setImmediate(() => {
      prepare(response);
      const line = { method: request.method ?? 'GET', originalUrl: request.url ?? '/' };
      answerWithError(exception, Object.assign(request, line), response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('not listening on TCP');
    return await use(`http://127.0.0.1:${address.port}`);
  } finally {
    server.closeAllConnections();
    server.close();
  }
}

function answered(exception: unknown, prepare: (response: ServerResponse) => void = () => {}): Promise<Answer> {
  return withServer(exception, prepare, async (url) => {
    const response = await fetch(`${url}/v1/pets?limit=5`);
    return { status: response.status, headers: response.headers, text: await response.text() };
  });
}

/** Sends the head of a request and part of its body, and reads what comes back until the server closes. */
function answeredMidBody(exception: unknown): Promise<string> {
  return withServer(
    exception,
    () => {},
    (url) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(Number(new URL(url).port), '127.0.0.1');
        let text = '';
        socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
        socket.on('end', () => resolve(text));
        socket.on('error', reject);
        socket.write('POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{"name":');
      }),
  );
}

describe('answerWithError', () => {
  let logger: RecordingLogger;
  beforeEach(() => {
    logger = new RecordingLogger();
    Logger.overrideLogger(logger);
  });

  it('sends the Error body as JSON, with its headers and its length in bytes', async () => {
    const answer = await answered(new ApiError(401, 'Schlüssel fehlt', { 'WWW-Authenticate': 'Bearer' }));

    expect(answer.status).toBe(401);
    expect(JSON.parse(answer.text)).toEqual({ code: 'unauthorized', message: 'Schlüssel fehlt', status: 401 });
    expect(answer.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(answer.headers.get('content-length')).toBe(String(Buffer.byteLength(answer.text)));
    expect(answer.headers.get('www-authenticate')).toBe('Bearer');
    expect(answer.headers.get('connection')).toBe('keep-alive');
    expect(logger.lines).toEqual([]);
  });

  it('drops the headers set before the failure that no longer describe the answer, and keeps the others', async () => {
    const answer = await answered(new ApiError(400, 'bad'), (response) => {
      response.setHeader('Content-Type', 'text/html');
      response.setHeader('Content-Range', 'bytes 0-1/2');
      response.setHeader('Content-Disposition', 'attachment');
      response.setHeader('ETag', '"1"');
      response.setHeader('Last-Modified', 'Wed, 21 Oct 2015 07:28:00 GMT');
      response.setHeader('Location', '/v1/pets/1');
      response.setHeader('X-Request-Id', 'r-1');
    });

    expect(answer.headers.get('content-type')).toBe('application/json; charset=utf-8');
    for (const stale of ['content-range', 'content-disposition', 'etag', 'last-modified', 'location'])
      expect(answer.headers.get(stale)).toBeNull();
    expect(answer.headers.get('x-request-id')).toBe('r-1');
  });

  it('ends an answer already under way as it is', async () => {
    const answer = await answered(new Error('late'), (response) => {
      response.writeHead(200, { 'Content-Type': 'text/plain' });
      response.write('partial');
    });

    expect([answer.status, answer.text]).toEqual([200, 'partial']);
  });

  it('closes the connection after answering a request whose body is still coming', async () => {
    const answer = await answeredMidBody(new ApiError(401, 'no key'));

    expect(answer).toMatch(/^HTTP\/1\.1 401 /);
    expect(answer).toMatch(/\r\nConnection: close\r\n/i);
    expect(answer).toContain('{"code":"unauthorized","message":"no key","status":401}');
  });

  it('logs a database outage as a warning, without a stack', async () => {
    await answered(new StoreUnavailableError());

    expect(logger.lines).toEqual([
      { level: 'warn', message: 'GET /v1/pets: database unavailable', rest: ['ErrorFilter'] },
    ]);
  });

  it('logs an unexpected failure with its stack, which the client never sees', async () => {
    const failure = new Error('SELECT secret FROM keys');

    const answer = await answered(failure);

    expect(answer.text).not.toContain('secret');
    expect(logger.lines).toEqual([
      { level: 'error', message: 'GET /v1/pets failed', rest: [failure.stack, 'ErrorFilter'] },
    ]);
  });

  it("logs a dependency's error that carries a 4xx status as a failure, and answers 500", async () => {
    const failure = Object.assign(new Error('upstream said 404'), { status: 404 });

    const answer = await answered(failure);

    expect(answer.status).toBe(500);
    expect(logger.lines).toEqual([
      { level: 'error', message: 'GET /v1/pets failed', rest: [failure.stack, 'ErrorFilter'] },
    ]);
  });

  it('logs nothing for a client error a library marks for the client', async () => {
    const answer = await answered(httpError(416));

    expect(answer.status).toBe(416);
    expect(logger.lines).toEqual([]);
  });

  it('logs a thrown value that is not an Error as text', async () => {
    await answered('a string was thrown');

    expect(logger.lines).toEqual([
      { level: 'error', message: 'GET /v1/pets failed', rest: ['a string was thrown', 'ErrorFilter'] },
    ]);
  });
});
