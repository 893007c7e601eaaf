import http from 'node:http';
import { type EventEmitter, errorMonitor } from 'node:events';
import { connect, type Socket } from 'node:net';
import fc from 'fast-check';
import { TEST_API_KEY, useService } from '../support/server.js';
import { ERROR_CODES } from '../support/error-codes.js';

// Property-based fuzzing below the HTTP client: raw bytes on fresh TCP connections, for what
// fetch and node:http will not send. Each connection carries a keep-alive pipeline written in one
// go: valid requests with the test key (HTTP/1.1 and 1.0, HEAD, Connection: close, every method
// this Node knows, mixed-case paths, which are 404s), requests Node's parser refuses or may refuse
// (bad bytes in the path or a header, conflicting or invalid Content-Length and Transfer-Encoding,
// header sections over 16 KiB, malformed request lines, bare LF), requests Node answers before
// Express (no Host, an Expect other than 100-continue, CONNECT), bytes that are not a request at
// all (TLS, SSH, HTTP/2 preface, random bytes), and last, possibly, an `Expect: 100-continue`
// request (its body sent once 100 Continue comes, or at once) or an Upgrade the service ignores.
// From the raw text that comes back, for every connection:
//   - it ends within HANG_MS: every request is answered, or the server closes the connection
//     after an answer that said Connection: close (after bytes that are not a request, it closes);
//   - every answer starts with a status line, none is a 5xx, none is more than was asked for (bytes
//     behind a request that are not a request get no answer), none follows a Connection: close;
//   - every error answer is application/json with the Error body, `status` as in the status line
//     (an answer to HEAD has no body);
//   - no 100 Continue for a Content-Length over 16 KiB, nor for a request that did not ask for one;
//   - no 'error' on the server's end of a connection that nothing handles (it would stop the process);
//   - the status the contract fixes, where it fixes one.
// Every problem is collected, grouped by kind with the raw bytes of up to three instances, and the
// test fails at the end with the list. FUZZ_SEED and FUZZ_RUNS as in fuzz.e2e-spec.ts, scaled:
// FUZZ_RUNS / 5 batches of 1 to 4 concurrent connections (300 batches when unset); FUZZ_SHRINK=1
// stops at the first failing batch and lets fast-check shrink it; FUZZ_RAW_LABELS=1 also prints
// how many pieces of each kind were sent. The faults it found are kept below it, one focused test
// each.

const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : 20261122;
const RUNS = Math.max(1, Math.round((process.env.FUZZ_RUNS ? Number(process.env.FUZZ_RUNS) : 1500) / 5));
const SHRINK = process.env.FUZZ_SHRINK === '1';
/** Longer than this without every answer or a close is a hang. */
const HANG_MS = 2000;
/** How long to keep listening once every request is answered, for an answer nobody asked for. */
const LINGER_MS = 40;
const BODY_LIMIT = 16 * 1024;
const AUTH = `Authorization: Bearer ${TEST_API_KEY}`;
const CODES = new Set(ERROR_CODES.values());

const service = useService();

/** One piece of an exchange: a request (well-formed or not), or bytes that are not a request at all. */
type Piece = {
  kind: 'request' | 'garbage';
  /** What it is, for the summary and reports. */
  label: string;
  /** latin1: one character, one byte. */
  bytes: string;
  /** Answered as HEAD: no body. */
  head: boolean;
  /** Statuses the contract allows, or null where it fixes none (only: no 5xx, Error body). */
  expected: readonly number[] | null;
  /**
   * Whether the connection ends after its answer, so that nothing sent behind it is answered:
   * Connection: close, HTTP/1.0 without keep-alive, a request Node refuses or answers itself
   * (no Host, Expect, CONNECT). 'maybe': a request some Node versions refuse.
   */
  closes: 'no' | 'maybe' | 'yes';
  /** `Expect: 100-continue` and the Content-Length it declares. */
  continueFor: number | null;
  /** Written once a 100 Continue arrives (the body of an `Expect: 100-continue` request): only last on a connection. */
  deferred: string | null;
};

type Req = {
  method: string;
  target: string;
  version?: string;
  host?: boolean;
  auth?: boolean;
  headers?: string[];
  body?: string;
};

function wire(r: Req): string {
  const lines = [`${r.method} ${r.target} HTTP/${r.version ?? '1.1'}`];
  if (r.host ?? true) lines.push('Host: localhost');
  if (r.auth ?? true) lines.push(AUTH);
  lines.push(...(r.headers ?? []));
  if (r.body !== undefined) lines.push(`Content-Length: ${r.body.length}`);
  return `${lines.join('\r\n')}\r\n\r\n${r.body ?? ''}`;
}

const piece = (p: Partial<Piece> & Pick<Piece, 'label' | 'bytes'>): Piece => ({
  kind: 'request',
  head: false,
  expected: null,
  closes: 'no',
  continueFor: null,
  deferred: null,
  ...p,
});

const latin1Char = (codes: number[]): fc.Arbitrary<string> =>
  fc.constantFrom(...codes).map((c) => String.fromCharCode(c));
const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);

// ---- valid requests ------------------------------------------------------------------------

type Route = {
  method: 'GET' | 'POST' | 'OTHER';
  target: string;
  expected: readonly number[] | null;
  auth?: boolean;
  body?: string;
  headers?: string[];
};

const petBody = fc
  .record({ name: fc.stringMatching(/^[A-Za-z][A-Za-z ]{0,20}$/), categoryId: fc.integer({ min: 1, max: 1000 }) })
  .map((pet) => JSON.stringify(pet));

const route: fc.Arbitrary<Route> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom<Route>(
      { method: 'GET', target: '/v1/pets', expected: [200] },
      { method: 'GET', target: '/v1/pets?limit=2&status=sold', expected: [200] },
      { method: 'GET', target: '/v1/pets?limit=0', expected: [400] },
      { method: 'GET', target: '/v1/pets?cursor=forged', expected: [400] },
      { method: 'GET', target: '/v1/pets', expected: [401], auth: false },
      { method: 'GET', target: '/v1/pets/1', expected: [200, 404] },
      { method: 'GET', target: '/v1/pets/999999999', expected: [404] },
      { method: 'GET', target: '/v1/pets/abc', expected: [404] },
      { method: 'GET', target: '/v1/pets/%ZZ', expected: [400] },
      { method: 'GET', target: '/healthz', expected: [200] },
      { method: 'GET', target: '/healthz', expected: [200], auth: false },
      { method: 'GET', target: '/readyz', expected: [200] },
      { method: 'GET', target: '/openapi.json', expected: [200], auth: false },
      { method: 'GET', target: '/nope', expected: [404] },
      { method: 'GET', target: '/v1/nope', expected: [404] },
      { method: 'GET', target: 'http://localhost/v1/pets', expected: null },
    ),
  },
  // Routes match case exactly.
  {
    weight: 3,
    arbitrary: fc
      .constantFrom(
        '/V1/pets',
        '/v1/PETS',
        '/v1/Pets/1',
        '/V1/PETS/1',
        '/HEALTHZ',
        '/Healthz',
        '/OPENAPI.JSON',
        '/V1/pets?limit=1',
      )
      .map((target): Route => ({ method: 'GET', target, expected: [404] })),
  },
  {
    weight: 2,
    arbitrary: petBody.map((body): Route => ({
      method: 'POST',
      target: '/v1/pets',
      expected: [201],
      body,
      headers: ['Content-Type: application/json'],
    })),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom<Route>(
      {
        method: 'POST',
        target: '/v1/pets',
        expected: [400],
        body: '{"name":',
        headers: ['Content-Type: application/json'],
      },
      { method: 'POST', target: '/v1/pets', expected: [415], body: 'name=Rex', headers: ['Content-Type: text/plain'] },
      {
        method: 'POST',
        target: '/v1/pets',
        expected: [401],
        body: '{"name":"Rex","categoryId":1}',
        headers: ['Content-Type: application/json'],
        auth: false,
      },
      { method: 'POST', target: '/v1/pets', expected: [400], body: '', headers: ['Content-Type: application/json'] },
    ),
  },
  // Methods Node knows (from this Node's list), on the service's paths and others.
  {
    weight: 3,
    arbitrary: fc
      .tuple(
        fc.constantFrom(...http.METHODS.filter((m) => !['CONNECT', 'GET', 'HEAD', 'POST'].includes(m))),
        fc.constantFrom('/v1/pets', '/v1/pets/1', '/healthz', '/nope', '*'),
      )
      .map(([method, target]): Route => ({
        method: 'OTHER',
        target: `${method} ${target}`,
        expected: ['DELETE', 'PUT', 'PATCH'].includes(method) && target.startsWith('/v1/pets') ? [405] : null,
      })),
  },
);

const validRequest: fc.Arbitrary<Piece> = fc
  .record({
    route,
    head: fc.boolean(),
    version: fc.constantFrom('1.1', '1.1', '1.1', '1.0'),
    connection: fc.constantFrom(null, null, null, 'keep-alive', 'close'),
  })
  .map(({ route: r, head, version, connection }) => {
    const headers = [...(r.headers ?? []), ...(connection === null ? [] : [`Connection: ${connection}`])];
    let method: string = r.method;
    let target = r.target;
    if (r.method === 'OTHER') [method = 'GET', target = '/'] = r.target.split(' ');
    else if (r.method === 'GET' && head) method = 'HEAD';
    const body = r.body ?? (r.method === 'OTHER' && method !== 'TRACE' ? '' : undefined);
    return piece({
      label: `${method} ${r.method === 'OTHER' ? '(other method)' : target.replace(/\?.*/, '?…')} HTTP/${version}`,
      bytes: wire({ method, target, version, auth: r.auth, headers, body }),
      head: method === 'HEAD',
      expected: r.expected,
      closes: connection === 'close' || (version === '1.0' && connection !== 'keep-alive') ? 'yes' : 'no',
    });
  });

// ---- what Node answers before Express --------------------------------------------------------

const beforeExpress: fc.Arbitrary<Piece> = fc.oneof(
  fc.tuple(fc.constantFrom('GET', 'HEAD'), fc.constantFrom('/v1/pets', '/healthz', '/nope')).map(([method, target]) =>
    piece({
      label: 'HTTP/1.1 without Host',
      bytes: wire({ method, target, host: false }),
      head: method === 'HEAD',
      expected: [400],
      closes: 'yes',
    }),
  ),
  fc
    .constantFrom('x', '200-ok', '', 'continue', '100', '101-switching-protocols', '100-continu', 'foo=bar')
    .map((value) =>
      piece({
        label: 'an Expect other than 100-continue',
        bytes: wire({ method: 'GET', target: '/v1/pets', headers: [`Expect: ${value}`] }),
        expected: [417],
        closes: 'yes',
      }),
    ),
  fc.constantFrom('100-continue', 'x').map((value) =>
    piece({
      label: 'HTTP/1.0 with an Expect (ignored)',
      bytes: wire({ method: 'GET', target: '/healthz', version: '1.0', headers: [`Expect: ${value}`] }),
      expected: [200],
      closes: 'yes',
    }),
  ),
  fc.constantFrom('example.com:443', 'localhost:80', '127.0.0.1:5432').map((authority) =>
    piece({
      label: 'CONNECT',
      bytes: `CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`,
      expected: [405],
      closes: 'yes',
    }),
  ),
);

/**
 * An Upgrade the service ignores (RFC 9110, 7.8), only last on a connection: Node leaves bytes
 * pipelined behind an Upgrade request unparsed until more arrive or keepAliveTimeout (5 s) closes
 * the connection, and a client cannot know whether those bytes would be read as HTTP.
 */
const upgrade: fc.Arbitrary<Piece> = fc.constantFrom('websocket', 'h2c', 'tls/1.2').map((protocol) =>
  piece({
    label: 'Upgrade (ignored)',
    bytes: wire({ method: 'GET', target: '/v1/pets', headers: ['Connection: Upgrade', `Upgrade: ${protocol}`] }),
    expected: [200],
  }),
);

// ---- requests Node's parser refuses (or might) -------------------------------------------------

const insert = (text: string, at: number, what: string): string => text.slice(0, at) + what + text.slice(at);

const refused: fc.Arbitrary<Piece> = fc.oneof(
  // A byte not allowed in a request target.
  fc
    .tuple(
      latin1Char([0, 1, 8, 0x0b, 0x0c, 0x1f, 0x7f]),
      fc.constantFrom('/v1/pets', '/healthz', '/v1/pets/1'),
      fc.nat(),
      fc.boolean(),
    )
    .map(([c, path, at, head]) =>
      piece({
        label: 'a control byte in the path',
        bytes: wire({ method: head ? 'HEAD' : 'GET', target: insert(path, 1 + (at % path.length), c) }),
        head,
        expected: [400],
        closes: 'yes',
      }),
    ),
  fc.tuple(latin1Char([0x09, 0x22, 0x3c, 0x5c, 0x5e, 0x60, 0x7b, 0x80, 0xa0, 0xe9, 0xff]), fc.nat()).map(([c, at]) =>
    piece({
      label: 'an unusual byte in the path',
      bytes: wire({ method: 'GET', target: insert('/v1/pets', 1 + (at % 8), c) }),
      closes: 'maybe',
    }),
  ),
  // Bytes not allowed in a header name or value.
  fc
    .tuple(latin1Char([0x20, 0x28, 0x29, 0x2c, 0x2f, 0x40, 0x5b, 0x22, 0x01, 0x7f, 0xe9, 0x7b]), fc.boolean())
    .map(([c, head]) =>
      piece({
        label: 'a byte not allowed in a header name',
        bytes: wire({ method: head ? 'HEAD' : 'GET', target: '/v1/pets', headers: [`X-Bad${c}Name: v`] }),
        head,
        expected: [400],
        closes: 'yes',
      }),
    ),
  latin1Char([0x00, 0x01, 0x08, 0x0b, 0x1f]).map((c) =>
    piece({
      label: 'a control byte in a header value',
      bytes: wire({ method: 'GET', target: '/v1/pets', headers: [`X-Bad: a${c}b`] }),
      expected: [400],
      closes: 'yes',
    }),
  ),
  latin1Char([0x7f, 0x80, 0xff, 0x09]).map((c) =>
    piece({
      label: 'an unusual byte in a header value',
      bytes: wire({ method: 'GET', target: '/v1/pets', headers: [`X-Odd: a${c}b`] }),
      closes: 'maybe',
    }),
  ),
  fc
    .constantFrom('X-Bare: a\rb', 'NoColonHere', ': no-name', 'Host : localhost', 'X-A : b', ' X-Leading: space')
    .map((line) =>
      piece({
        label: 'a malformed header line',
        bytes: wire({ method: 'GET', target: '/v1/pets', headers: [line] }),
        expected: [400],
        closes: 'yes',
      }),
    ),
  fc.constantFrom('X-Folded: a\r\n b', 'X-Folded: a\r\n\tb').map((line) =>
    piece({
      label: 'an obsolete folded header',
      bytes: wire({ method: 'GET', target: '/v1/pets', headers: [line] }),
      closes: 'maybe',
    }),
  ),
  // Framing: conflicting, invalid, or doubled Content-Length and Transfer-Encoding.
  fc
    .constantFrom(
      {
        label: 'conflicting Content-Length',
        headers: ['Content-Length: 1', 'Content-Length: 2'],
        body: 'xx',
        sure: true,
      },
      { label: 'conflicting Content-Length', headers: ['Content-Length: 2, 3'], body: 'xxx', sure: true },
      {
        label: 'Transfer-Encoding with Content-Length',
        headers: ['Transfer-Encoding: chunked', 'Content-Length: 5'],
        body: '0\r\n\r\n',
        sure: true,
      },
      {
        label: 'Transfer-Encoding with Content-Length',
        headers: ['Content-Length: 5', 'Transfer-Encoding: chunked'],
        body: '0\r\n\r\n',
        sure: true,
      },
      { label: 'an invalid Content-Length', headers: ['Content-Length: abc'], body: '', sure: true },
      { label: 'an invalid Content-Length', headers: ['Content-Length: -1'], body: '', sure: true },
      { label: 'an invalid Content-Length', headers: ['Content-Length: 1 2'], body: 'x', sure: true },
      { label: 'an invalid Content-Length', headers: ['Content-Length: 0x10'], body: '', sure: true },
      { label: 'an invalid Content-Length', headers: ['Content-Length: +5'], body: 'xxxxx', sure: true },
      // Refused once the head is through: the route may answer first (a 404, a 401), then the connection closes.
      {
        label: 'a Transfer-Encoding not ending in chunked',
        headers: ['Transfer-Encoding: gzip'],
        body: 'x',
        sure: 'after the head',
      },
      {
        label: 'a Transfer-Encoding not ending in chunked',
        headers: ['Transfer-Encoding: chunked, gzip'],
        body: '0\r\n\r\n',
        sure: 'after the head',
      },
      {
        label: 'an invalid chunk size',
        headers: ['Transfer-Encoding: chunked'],
        body: 'zz\r\nabc\r\n0\r\n\r\n',
        sure: 'after the head',
      },
      {
        label: 'an invalid chunk size',
        headers: ['Transfer-Encoding: chunked'],
        body: '-1\r\n\r\n',
        sure: 'after the head',
      },
      {
        label: 'a doubled Content-Length',
        headers: ['Content-Length: 2', 'Content-Length: 2'],
        body: 'xx',
        sure: false,
      },
      {
        label: 'a doubled Transfer-Encoding',
        headers: ['Transfer-Encoding: chunked', 'Transfer-Encoding: chunked'],
        body: '0\r\n\r\n',
        sure: false,
      },
      {
        label: 'an unusual Transfer-Encoding',
        headers: ['Transfer-Encoding: Chunked'],
        body: '0\r\n\r\n',
        sure: false,
      },
    )
    .chain(
      ({
        label,
        headers,
        body,
        sure,
      }: {
        label: string;
        headers: readonly string[];
        body: string;
        sure: boolean | 'after the head';
      }) =>
        fc.constantFrom('/v1/pets', '/healthz', '/nope').map((target) =>
          piece({
            label,
            bytes: `POST ${target} HTTP/1.1\r\nHost: localhost\r\n${AUTH}\r\nContent-Type: application/json\r\n${headers.join('\r\n')}\r\n\r\n${body}`,
            expected: sure === true ? [400] : null,
            closes: sure === false ? 'maybe' : 'yes',
          }),
        ),
    ),
  // Header sections over Node's 16 KiB: one long header, many headers, or a long path.
  fc.tuple(fc.integer({ min: 16_500, max: 30_000 }), fc.boolean()).map(([n, head]) =>
    piece({
      label: 'a header section over 16 KiB (one header)',
      bytes: wire({ method: head ? 'HEAD' : 'GET', target: '/v1/pets', headers: [`X-Big: ${'a'.repeat(n)}`] }),
      head,
      expected: [431],
      closes: 'yes',
    }),
  ),
  // Node 20 lets many short header lines through past 16 KiB; later versions count them.
  fc.integer({ min: 1000, max: 1800 }).map((n) =>
    piece({
      label: 'a header section over 16 KiB (many headers)',
      bytes: wire({ method: 'GET', target: '/v1/pets', headers: range(1, n).map((i) => `X-H-${i}: vvvvvvvv`) }),
      expected: [200, 431],
      closes: 'maybe',
    }),
  ),
  fc.integer({ min: 16_500, max: 30_000 }).map((n) =>
    piece({
      label: 'a request line over 16 KiB',
      bytes: wire({ method: 'GET', target: `/v1/pets?x=${'a'.repeat(n)}` }),
      expected: [400, 414, 431],
      closes: 'yes',
    }),
  ),
  // Request lines that are not HTTP/1.x.
  fc
    .constantFrom(
      'get /v1/pets HTTP/1.1',
      'FOO /v1/pets HTTP/1.1',
      'GETT /v1/pets HTTP/1.1',
      'G\u0000T /v1/pets HTTP/1.1',
      'GET/v1/pets HTTP/1.1',
      'GET  HTTP/1.1',
      'GET /v1/pets HTTP/1',
      'GET /v1/pets http/1.1',
      'GET /v1/pets HTTP/1.1x',
      'GET /v1/pets HTTP/9.9',
      'GET /v1/pets HTTP/1.1 x',
    )
    .map((line) =>
      piece({
        label: 'a malformed request line',
        bytes: `${line}\r\nHost: localhost\r\n${AUTH}\r\n\r\n`,
        expected: [400],
        closes: 'yes',
      }),
    ),
  fc
    .constantFrom(
      'GET /v1/pets  HTTP/1.1',
      'GET /v1/pets HTTP/1.2',
      'GET /v1/pets HTTP/2.0',
      'GET /v1/pets HTTP/0.9',
      'GET /v1/pets HTTP/1.01',
      'BREW /v1/pets HTTP/1.1',
    )
    .map((line) =>
      piece({
        label: 'an unusual request line',
        bytes: `${line}\r\nHost: localhost\r\n${AUTH}\r\n\r\n`,
        closes: 'maybe',
      }),
    ),
  // LF alone for line ends.
  fc.constantFrom('/v1/pets', '/healthz').map((target) =>
    piece({
      label: 'bare LF line ends',
      bytes: wire({ method: 'GET', target }).replaceAll('\r\n', '\n'),
      closes: 'maybe',
    }),
  ),
);

// ---- bytes that are not a request ----------------------------------------------------------------

/** A first byte that neither starts a method Node knows nor is skipped (CR, LF) as an empty line before a request. */
const notAMethodStart = latin1Char([
  ...range(0x00, 0x09),
  ...range(0x0e, 0x1f),
  0x21,
  0x23,
  0x25,
  0x2a,
  0x30,
  0x39,
  0x3c,
  0x7b,
  0x7f,
  0x80,
  0xc3,
  0xff,
  0x5a,
  0x78,
  0x67,
]);

const garbage: fc.Arbitrary<Piece> = fc
  .oneof(
    fc.constantFrom(
      // TLS ClientHello, HTTP/2 preface, and other protocols spoken to the wrong port.
      '\u0016\u0003\u0001\u0002\u0000\u0001\u0000\u0001\u00fc\u0003\u0003' + '\u0000'.repeat(32),
      'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n',
      'SSH-2.0-OpenSSH_9.6\r\n',
      'HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n',
      'EHLO example.com\r\n',
      '*1\r\n$4\r\nPING\r\n',
      'PROXY TCP4 1.2.3.4 5.6.7.8 1111 2222\r\n',
      '{"name":"Rex","categoryId":1}\r\n\r\n',
      '\u0001\u0002 garbage\r\n\r\n',
      '\u0000'.repeat(64),
    ),
    fc
      .tuple(notAMethodStart, fc.uint8Array({ maxLength: 200 }))
      .map(([first, rest]) => first + Buffer.from(rest).toString('latin1')),
  )
  .map((bytes) => piece({ kind: 'garbage', label: 'bytes that are not a request', bytes }));

// ---- Expect: 100-continue, last on the connection ------------------------------------------------

const expectContinue: fc.Arbitrary<Piece> = fc.oneof(
  // Too large to read: answered before any 100 Continue, and the body never sent.
  fc
    .record({
      length: fc.constantFrom(BODY_LIMIT + 1, 20_000, 1_000_000, 524_288_000, 99_999_999_999),
      value: fc.constantFrom('100-continue', '100-Continue', '100-CONTINUE'),
      encoding: fc.constantFrom(null, null, null, 'identity', 'gzip', 'br'),
      auth: fc.boolean(),
      prefix: fc.constantFrom('', '{"name":'),
    })
    .map(({ length, value, encoding, auth, prefix }) =>
      piece({
        label: `Expect: 100-continue over 16 KiB${encoding === null ? '' : ` (Content-Encoding: ${encoding})`}`,
        bytes:
          `POST /v1/pets HTTP/1.1\r\nHost: localhost\r\n${auth ? `${AUTH}\r\n` : ''}Content-Type: application/json\r\nContent-Length: ${length}\r\n` +
          `${encoding === null ? '' : `Content-Encoding: ${encoding}\r\n`}Expect: ${value}\r\n\r\n${prefix}`,
        expected: auth ? [413] : [401],
        continueFor: length,
        // Should a 100 Continue come all the same: bytes that are neither gzip, brotli nor JSON.
        deferred: 'x'.repeat(BODY_LIMIT + 1),
        closes: 'yes',
      }),
    ),
  // A body the service reads: sent once 100 Continue arrives, or at once.
  fc
    .record({
      pet: petBody,
      length: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: BODY_LIMIT - 100 }), fc.constant(BODY_LIMIT)),
      upfront: fc.boolean(),
      auth: fc.boolean(),
    })
    .map(({ pet, length, upfront, auth }) => {
      const body = pet.padEnd(length, ' ');
      const head = `POST /v1/pets HTTP/1.1\r\nHost: localhost\r\n${auth ? `${AUTH}\r\n` : ''}Content-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`;
      return piece({
        label: `Expect: 100-continue up to 16 KiB (body ${upfront ? 'sent at once' : 'sent after 100 Continue'})`,
        bytes: upfront ? head + body : head,
        expected: auth ? [201] : [401],
        continueFor: body.length,
        deferred: upfront ? null : body,
        closes: auth ? 'no' : 'yes',
      });
    }),
);

// ---- exchanges -------------------------------------------------------------------------------------

const middle: fc.Arbitrary<Piece> = fc.oneof(
  { weight: 12, arbitrary: validRequest },
  { weight: 3, arbitrary: beforeExpress },
  { weight: 5, arbitrary: refused },
  { weight: 2, arbitrary: garbage },
);

const exchangeArb: fc.Arbitrary<Piece[]> = fc
  // What cannot be followed on the connection (a body not all sent, an Upgrade) only last.
  .tuple(
    fc.array(middle, { minLength: 0, maxLength: 4 }),
    fc.option(fc.oneof(expectContinue, garbage, refused, upgrade), { freq: 2 }),
  )
  .map(([pieces, tail]) => (tail === null ? pieces : [...pieces, tail]))
  .filter((pieces) => pieces.length > 0);

// ---- sending and reading ----------------------------------------------------------------------------

type Received = { raw: string; closed: boolean; timedOut: boolean; ms: number; port: number };

type Response = { status: number; head: string; headers: Map<string, string>; body: string; interim: boolean };
type Parsed = { responses: Response[]; problem: string | null; incomplete: boolean };

/**
 * Reads the responses in `raw` in order; `head(i)` says whether the i-th final response answers
 * a HEAD (no body). `complete`: nothing more will come (the connection closed).
 */
function parseResponses(raw: string, head: (i: number) => boolean, complete: boolean): Parsed {
  const responses: Response[] = [];
  let at = 0;
  let finals = 0;
  const stop = (problem: string | null, incomplete = false): Parsed => ({ responses, problem, incomplete });
  while (at < raw.length) {
    const end = raw.indexOf('\r\n\r\n', at);
    const lineEnd = raw.indexOf('\r\n', at);
    const line = raw.slice(at, lineEnd === -1 ? raw.length : lineEnd);
    const statusLine = /^HTTP\/1\.[01] (\d{3})(?: [^\r\n]*)?$/.exec(line);
    if (lineEnd !== -1 && statusLine === null)
      return stop(`bytes that are not a status line: ${show(raw.slice(at, at + 80))}`);
    if (lineEnd === -1 && !'HTTP/1.1 '.startsWith(raw.slice(at, at + 9)))
      return stop(`bytes that are not a status line: ${show(raw.slice(at, at + 80))}`);
    if (end === -1 || statusLine === null)
      return complete
        ? stop(`a response cut off in its header section: ${show(raw.slice(at, at + 80))}`)
        : stop(null, true);
    const status = Number(statusLine[1]);
    const headText = raw.slice(at, end);
    const headers = new Map<string, string>();
    for (const field of headText.split('\r\n').slice(1)) {
      const colon = field.indexOf(':');
      if (colon > 0) headers.set(field.slice(0, colon).trim().toLowerCase(), field.slice(colon + 1).trim());
    }
    at = end + 4;
    const interim = status < 200;
    let body = '';
    if (!interim && !(head(finals) || status === 204 || status === 304)) {
      if (/chunked/i.test(headers.get('transfer-encoding') ?? '')) {
        for (;;) {
          const sizeEnd = raw.indexOf('\r\n', at);
          if (sizeEnd === -1) return complete ? stop('a chunked body cut off') : stop(null, true);
          const size = parseInt(raw.slice(at, sizeEnd), 16);
          if (Number.isNaN(size)) return stop(`a malformed chunk size: ${show(raw.slice(at, sizeEnd))}`);
          if (raw.length < sizeEnd + 2 + size + 2) return complete ? stop('a chunked body cut off') : stop(null, true);
          body += raw.slice(sizeEnd + 2, sizeEnd + 2 + size);
          at = sizeEnd + 2 + size + 2;
          if (size === 0) break;
        }
      } else if (headers.has('content-length')) {
        const length = Number(headers.get('content-length'));
        if (raw.length < at + length)
          return complete ? stop(`a body cut off: ${raw.length - at} of ${length} bytes`) : stop(null, true);
        body = raw.slice(at, at + length);
        at += length;
      } else {
        // Delimited by the close.
        if (!complete) return stop(null, true);
        body = raw.slice(at);
        at = raw.length;
      }
    }
    responses.push({ status, head: headText, headers, body, interim });
    if (!interim) finals++;
  }
  return stop(null);
}

/**
 * Writes `bytes` on a new connection (and `deferred` once a 100 Continue comes back), and reads
 * until the server closes, `answered(raw)` holds (then LINGER_MS more, for answers nobody asked
 * for), or HANG_MS passes.
 */
function exchange(
  url: string,
  bytes: string,
  deferred: string | null,
  answered: (raw: string) => boolean,
): Promise<Received> {
  const { port: serverPort, hostname } = new URL(url);
  const started = performance.now();
  return new Promise((resolve) => {
    const socket = connect(Number(serverPort), hostname);
    let port = 0;
    socket.on('connect', () => (port = socket.localPort ?? 0));
    let raw = '';
    let sentDeferred = false;
    let linger: NodeJS.Timeout | undefined;
    let done = false;
    const finish = (closed: boolean, timedOut: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearTimeout(linger);
      socket.destroy();
      resolve({ raw, closed, timedOut, ms: performance.now() - started, port });
    };
    const timer = setTimeout(() => finish(false, true), HANG_MS);
    socket.on('data', (chunk: Buffer) => {
      raw += chunk.toString('latin1');
      if (deferred !== null && !sentDeferred && raw.includes('HTTP/1.1 100 Continue\r\n\r\n')) {
        sentDeferred = true;
        socket.write(Buffer.from(deferred, 'latin1'));
      }
      if (linger === undefined && answered(raw)) linger = setTimeout(() => finish(false, false), LINGER_MS);
    });
    socket.on('close', () => finish(true, false));
    socket.on('error', () => finish(true, false));
    socket.write(Buffer.from(bytes, 'latin1'));
  });
}

// ---- judging ------------------------------------------------------------------------------------------

const stats = {
  waitedMs: 0,
  exchanges: 0,
  pieces: 0,
  answers: 0,
  continues: 0,
  closedUnanswered: 0,
  byStatus: new Map<number, number>(),
  byLabel: new Map<string, number>(),
};
/**
 * Errors emitted on the server's end of a connection with no listener to handle them, by the
 * client's port: each is an uncaught exception, which stops the service.
 */
const unhandled = new Map<number, string[]>();

function watchUnhandledErrors(server: http.Server): void {
  server.on('connection', (socket: Socket) => {
    const port = socket.remotePort ?? 0;
    (socket as EventEmitter).on(errorMonitor, (error: unknown) => {
      if (socket.listenerCount('error') > 0) return;
      unhandled.set(port, [...(unhandled.get(port) ?? []), String(error)]);
    });
  });
}

/** Problems by kind: how many, and the first ones in full. */
const found = new Map<string, { count: number; examples: string[] }>();

/** Printable raw bytes: control bytes escaped, long runs of one byte shortened. */
function show(text: string, max = 400): string {
  const shortened = text.replace(/(.)\1{15,}/gs, (run, c: string) => `${c.repeat(3)}…(${run.length}×)`);
  const escaped = JSON.stringify(shortened);
  return escaped.length > max ? `${escaped.slice(0, max)}…` : escaped;
}

function evidence(pieces: Piece[], received: Received): string {
  return (
    `    sent: ${pieces.map((p) => `[${p.label}] ${show(p.bytes, 300)}`).join('\n          ')}` +
    `${pieces.some((p) => p.deferred !== null) ? ' (+ the body once 100 Continue came)' : ''}\n` +
    `    got (${received.closed ? 'then closed' : received.timedOut ? `nothing more, connection open after ${HANG_MS} ms` : 'connection left open'}, ${received.ms.toFixed(0)} ms): ${show(received.raw, 600)}`
  );
}

function errorBodyProblem(status: number, response: Response, head: boolean): string | null {
  if (!/^application\/json(;|$)/i.test(response.headers.get('content-type') ?? ''))
    return `no Content-Type application/json (${response.headers.get('content-type') ?? 'none'})`;
  if (head) return response.body === '' ? null : 'a body in an answer to HEAD';
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(response.body, 'latin1').toString('utf8'));
  } catch {
    return 'a body that is not JSON';
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'a body that is not a JSON object';
  const { code, message, status: bodyStatus } = value as Record<string, unknown>;
  if (Object.keys(value).sort().join() !== 'code,message,status')
    return `not exactly {code, message, status}: ${Object.keys(value).join(', ')}`;
  if (bodyStatus !== status) return `status ${String(bodyStatus)} in the body`;
  if (typeof message !== 'string' || message.trim() === '') return 'no message';
  const due = ERROR_CODES.get(status);
  if (typeof code !== 'string' || !CODES.has(code) || (due !== undefined && code !== due))
    return `code ${JSON.stringify(code)}`;
  return null;
}

/**
 * The requests the server must answer, in order (`must`), and those it may answer (`may`): up to
 * the first one after which the connection ends, and never garbage pipelined behind a request
 * (garbage that opens the connection may be answered, or the connection closed).
 */
function answerable(pieces: Piece[]): { must: Piece[]; may: Piece[] } {
  if (pieces[0]?.kind === 'garbage') return { must: [], may: [pieces[0]] };
  const may: Piece[] = [];
  let must: Piece[] | null = null;
  for (const p of pieces) {
    if (p.kind === 'garbage') break;
    may.push(p);
    if (p.closes === 'maybe' && must === null) must = [...may];
    if (p.closes === 'yes') break;
  }
  return { must: must ?? may, may };
}

/** Checks one exchange; returns its problems, each a first line (the kind) and the evidence. */
function judge(pieces: Piece[], received: Received): string[] {
  const problems: string[] = [];
  /** `kind` is the first line, by which problems are grouped; `detail` the specifics of this one. */
  const fail = (kind: string, detail = '') =>
    problems.push(`${kind}\n${detail === '' ? '' : `    ${detail}\n`}${evidence(pieces, received)}`);
  const { must, may } = answerable(pieces);
  const parsed = parseResponses(received.raw, (i) => may[i]?.head ?? false, received.closed || received.timedOut);
  if (parsed.problem !== null) fail(parsed.problem.replace(/:.*/s, ''), parsed.problem);
  const finals = parsed.responses.filter((r) => !r.interim);

  for (const error of unhandled.get(received.port) ?? [])
    fail("an 'error' on the server's socket that nothing handles (an uncaught exception: the process stops)", error);
  unhandled.delete(received.port);
  // The server may end the connection after any answer that says so (Connection: close); the
  // client then sends the rest again. It may not leave it open with requests unanswered.
  const saidClose = /(^|,)\s*close\s*(,|$)/i.test(finals.at(-1)?.headers.get('connection') ?? '');
  if (received.timedOut) {
    if (finals.length >= must.length && pieces.some((p) => p.kind === 'garbage'))
      fail('the connection left open after bytes that are not a request');
    else fail(`a hang: ${finals.length} of ${may.length} requests answered, and the connection left open`);
  } else if (finals.length < must.length && !saidClose && parsed.problem === null) {
    const next = must[finals.length];
    // Bytes Node refuses, behind an answer already on its way with keep-alive, are not told apart
    // from garbage (the parser cannot say where a request would start): the connection closes, with
    // no second answer the client may not have asked for. Decided; anything else is a failure.
    if (!(finals.length > 0 && next !== undefined && next.closes !== 'no')) {
      fail(
        `the connection closed with ${must.length - finals.length} of ${must.length} requests unanswered, and no Connection: close`,
      );
    }
  }
  if (finals.length > may.length)
    fail(`${finals.length} answers to ${may.length} requests: an answer nobody asked for`);
  if (finals.length === 0 && received.closed) stats.closedUnanswered++;

  let final = 0;
  for (const [i, response] of parsed.responses.entries()) {
    const p = may[final];
    const to = p === undefined ? '' : ` (to: ${p.label})`;
    stats.byStatus.set(response.status, (stats.byStatus.get(response.status) ?? 0) + 1);
    if (response.interim) {
      stats.continues++;
      if (response.status !== 100) fail(`an interim ${response.status}`, to);
      else if (p?.continueFor === null || p?.continueFor === undefined)
        fail('a 100 Continue to a request that did not ask for one', to);
      else if (p.continueFor > BODY_LIMIT)
        fail(`a 100 Continue for a Content-Length over ${BODY_LIMIT}`, `Content-Length ${p.continueFor}${to}`);
      continue;
    }
    final++;
    stats.answers++;
    const { status } = response;
    if (status >= 500) fail('a 5xx', `${status}${to}`);
    if (status >= 400 || (status < 200 && status !== 100)) {
      const defect = errorBodyProblem(status, response, p?.head ?? false);
      if (defect !== null) fail(`a ${status} that breaks the Error contract`, `${defect}${to}`);
    }
    if (p?.expected != null && !p.expected.includes(status))
      fail(`expected ${p.expected.join(' or ')} (to ${p.label}), got ${status}`);
    if (/(^|,)\s*close\s*(,|$)/i.test(response.headers.get('connection') ?? '') && i < parsed.responses.length - 1) {
      fail(
        'an answer after one that said Connection: close',
        `the answer after it: ${parsed.responses[i + 1]?.status ?? '?'}${to}`,
      );
    }
  }
  return problems;
}

function record(problems: string[]): void {
  for (const text of problems) {
    const kind = (text.split('\n')[0] ?? text).replace(/\b(?!\d{3}\b)\d+\b/g, '#');
    const seen = found.get(kind) ?? { count: 0, examples: [] };
    seen.count++;
    if (seen.examples.length < 3) seen.examples.push(text);
    found.set(kind, seen);
  }
}

async function runBatch(batch: Piece[][]): Promise<void> {
  const outcomes = await Promise.all(
    batch.map(async (pieces) => {
      const bytes = pieces.map((p) => p.bytes).join('');
      const deferred = pieces.at(-1)?.deferred ?? null;
      const { may } = answerable(pieces);
      // Every request answered: stop listening soon. After garbage, only the close ends it.
      const answered = pieces.some((p) => p.kind === 'garbage')
        ? () => false
        : (raw: string) =>
            parseResponses(raw, (i) => may[i]?.head ?? false, false).responses.filter((r) => !r.interim).length >=
            may.length;
      return { pieces, received: await exchange(service.server.url, bytes, deferred, answered) };
    }),
  );
  const problems: string[] = [];
  stats.waitedMs += Math.max(
    0,
    ...outcomes.filter(({ received }) => received.timedOut).map(({ received }) => received.ms),
  );
  for (const { pieces, received } of outcomes) {
    stats.exchanges++;
    stats.pieces += pieces.length;
    for (const p of pieces) stats.byLabel.set(p.label, (stats.byLabel.get(p.label) ?? 0) + 1);
    problems.push(...judge(pieces, received));
  }
  if (SHRINK && problems.length > 0) throw new Error(`${problems.length} problem(s):\n  ${problems.join('\n  ')}`);
  record(problems);
}

describe('fuzzing raw HTTP/1.x bytes', () => {
  beforeAll(() => watchUnhandledErrors(service.server.app.getHttpServer()));
  // A hang leaves the server's end of the connection open; the property has reported it by then.
  afterAll(() => service.server.app.getHttpServer().closeAllConnections());

  it('answers every request in time, never with a 5xx or more than asked, errors with the Error body, and no 100 Continue over 16 KiB', async () => {
    const started = Date.now();
    try {
      await fc.assert(fc.asyncProperty(fc.array(exchangeArb, { minLength: 1, maxLength: 4 }), runBatch), {
        seed: SEED,
        numRuns: RUNS,
        plugins: [fc.interruptAfterTimeLimit(90_000, { failOnInterrupt: true })],
      });
      const report = [...found].map(
        ([kind, { count, examples }]) =>
          `[${count}×] ${kind}\n${examples.map((e) => e.replace(/^[^\n]*\n/, '')).join('\n    --\n')}`,
      );
      if (report.length > 0)
        throw new Error(`${report.length} kind(s) of problem (seed ${SEED}):\n\n${report.slice(0, 30).join('\n\n')}`);
    } finally {
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      const byStatus = [...stats.byStatus]
        .sort(([a], [b]) => a - b)
        .map(([status, count]) => `${status}: ${count}`)
        .join(', ');
      console.log(
        `fuzz-raw: seed ${SEED}, ${RUNS} batches: ${stats.exchanges} connections, ${stats.pieces} pieces, ${stats.answers} answers in ${seconds} s ` +
          `(${byStatus}); ${stats.continues} 100 Continue; ${stats.closedUnanswered} closed without an answer; ${(stats.waitedMs / 1000).toFixed(1)} s waiting out hangs; ${found.size} kinds of problem`,
      );
      if (process.env.FUZZ_RAW_LABELS === '1')
        console.log(
          [...stats.byLabel]
            .sort(([, a], [, b]) => b - a)
            .map(([label, n]) => `${n}\t${label}`)
            .join('\n'),
        );
    }
  }, 120_000);
});

// Faults the property above found, one each, as the smallest exchange that shows it. Each asserts
// what the contract asks for, so it fails until the service does it.
describe('faults found by fuzzing raw bytes', () => {
  const get = (target: string, extra: string[] = []) =>
    [`GET ${target} HTTP/1.1`, 'Host: localhost', AUTH, ...extra, '', ''].join('\r\n');
  const CONNECT = 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n';
  const statusLines = (raw: string) => raw.match(/HTTP\/1\.1 \d{3}/g) ?? [];
  const send = (bytes: string) => exchange(service.server.url, bytes, null, () => false);

  // Nothing else may hold the server's end of a connection into the next test (or app.close()).
  afterEach(() => service.server.app.getHttpServer().closeAllConnections());

  it('survives a CONNECT pipelined behind a request answered 417 (the connect handler ends a socket already ended: an unhandled ERR_STREAM_WRITE_AFTER_END, which stops the process)', async () => {
    // errorMonitor sees an 'error' without handling it: an 'error' that no listener handles is an
    // uncaught exception, which ends the service (here Jest reports it as "Test suite failed to run").
    const server: http.Server = service.server.app.getHttpServer();
    const errors: string[] = [];
    const monitor = (socket: Socket) =>
      (socket as EventEmitter).on(errorMonitor, (error: unknown) => errors.push(String(error)));
    server.on('connection', monitor);
    try {
      const received = await send(`GET /healthz HTTP/1.1\r\nHost: localhost\r\nExpect: x\r\n\r\n${CONNECT}`);
      await new Promise((resolve) => setTimeout(resolve, 100));

      expect(statusLines(received.raw)).toEqual(['HTTP/1.1 417']);
      expect(errors).toEqual([]);
    } finally {
      server.off('connection', monitor);
    }
  });

  it('answers the requests pipelined ahead of a CONNECT, in order, before refusing it (before the fix the 405 goes out at once, and the requests ahead are never answered)', async () => {
    const received = await send(`${get('/healthz')}${CONNECT}`);

    expect(statusLines(received.raw)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 405']);
  });

  it('answers an Expect other than 100-continue pipelined behind another request (before the fix: never, its response has no socket yet when checkExpectation ends it)', async () => {
    const received = await send(`${get('/v1/pets')}${get('/healthz', ['Expect: x'])}`);

    expect(statusLines(received.raw)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 417']);
    expect(received.closed).toBe(true);
  });

  it.each([
    ['Transfer-Encoding: gzip', 'x'],
    ['Transfer-Encoding: chunked', 'zz\r\n'],
  ])(
    'answers a create whose framing Node refuses after the head (%s) with 400 and closes (before the fix: no answer, and the server keeps its end open even once the client has gone)',
    async (framing, body) => {
      const server: http.Server = service.server.app.getHttpServer();
      const received = await send(
        `POST /v1/pets HTTP/1.1\r\nHost: localhost\r\n${AUTH}\r\nContent-Type: application/json\r\n${framing}\r\n\r\n${body}`,
      );
      await new Promise((resolve) => setTimeout(resolve, 200));
      const open = await new Promise<number>((resolve) => server.getConnections((_error, count) => resolve(count)));

      expect(received.timedOut).toBe(false);
      expect(statusLines(received.raw)).toEqual(['HTTP/1.1 400']);
      expect(received.closed).toBe(true);
      expect(open).toBe(0);
    },
  );

  it('answers a request Node refuses that is pipelined behind another after the answer ahead, or says Connection: close on that answer (before the fix: it says keep-alive, then the connection closes with nothing more)', async () => {
    const received = await send(`${get('/v1/pets')}${get('/v1/pets', ['X-Bad: a\u0001b'])}`);
    const first = received.raw.slice(0, received.raw.indexOf('\r\n\r\n'));

    expect(received.closed).toBe(true);
    if (/\r\nConnection: close\r\n/i.test(`${first}\r\n`)) expect(statusLines(received.raw)).toEqual(['HTTP/1.1 200']);
    else expect(statusLines(received.raw)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 400']);
  });

  it.each([
    ['GET /V1/pets', get('/V1/pets')],
    ['HEAD /V1/pets', get('/V1/pets').replace('GET', 'HEAD')],
  ])(
    'sends no second answer to garbage behind a request answered at once (%s; on Node 20 the answer ahead is already writableFinished, and answerClientError answers the garbage too)',
    async (_request, request) => {
      const received = await send(`${request}\u0001\u0002 garbage\r\n\r\n`);

      expect(statusLines(received.raw)).toEqual(['HTTP/1.1 404']);
      expect(received.closed).toBe(true);
    },
  );

  it.each([['gzip'], ['br'], ['deflate']])(
    'sends no 100 Continue for a body (Content-Encoding: %s) whose Content-Length is over 16 KiB, but 413',
    async (encoding) => {
      const received = await send(
        `POST /v1/pets HTTP/1.1\r\nHost: localhost\r\n${AUTH}\r\nContent-Type: application/json\r\nContent-Encoding: ${encoding}\r\nContent-Length: 1000000\r\nExpect: 100-continue\r\n\r\n`,
      );

      expect(statusLines(received.raw)).toEqual(['HTTP/1.1 413']);
    },
  );
});
