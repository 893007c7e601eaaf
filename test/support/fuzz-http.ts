import http from 'node:http';

/** One request as it goes on the wire: through fetch (undici), or node:http for what fetch will not send. */
export type WireRequest = {
  transport: 'fetch' | 'http';
  method: string;
  /** Path and query after the origin, as given to the client (fetch normalises it, see `sentTarget`). */
  target: string;
  headers: [string, string][];
  body?: Uint8Array;
  /** node:http only: send the body in two pieces with Transfer-Encoding: chunked instead of Content-Length. */
  chunked?: boolean;
};

export type WireResponse = { status: number; headers: Map<string, string>; body: string };

export type Outcome =
  | { kind: 'response'; response: WireResponse }
  /** The client itself refused to send it (invalid header, URL or method for fetch or node:http): not a request. */
  | { kind: 'refused'; reason: string }
  /** Sent, but no response: a timeout (hang) or a dropped connection. */
  | { kind: 'failed'; reason: string }
  /** Answered, but test/support/contract.ts (which wraps fetch in e2e tests) found the answer outside the OpenAPI document. */
  | { kind: 'contract'; status: number; reason: string };

/** Sends the request; never throws. */
export async function send(origin: string, request: WireRequest, timeoutMs: number): Promise<Outcome> {
  return request.transport === 'fetch'
    ? sendWithFetch(origin, request, timeoutMs)
    : sendWithHttp(origin, request, timeoutMs);
}

/** What fetch actually puts in the request line (it percent-encodes and resolves dot segments), or null if it refuses the URL. */
export function sentTarget(origin: string, request: WireRequest): string | null {
  if (request.transport === 'http') return request.target;
  try {
    const url = new URL(origin + request.target);
    return url.pathname + url.search;
  } catch {
    return null;
  }
}

async function sendWithFetch(origin: string, request: WireRequest, timeoutMs: number): Promise<Outcome> {
  let headers: Headers;
  try {
    headers = new Headers();
    for (const [name, value] of request.headers) headers.append(name, value);
  } catch (error) {
    return { kind: 'refused', reason: describe(error) };
  }
  try {
    const response = await fetch(origin + request.target, {
      method: request.method,
      headers,
      body: request.body,
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
    const body = await response.text();
    return { kind: 'response', response: { status: response.status, headers: new Map(response.headers), body } };
  } catch (error) {
    // Duck-typed, not `instanceof`: undici's errors come from another realm than Jest's VM context.
    const name = field(error, 'name');
    const message = field(error, 'message');
    const violation = /^OpenAPI contract violation: .* -> (\d{3})/.exec(message);
    if (violation !== null) return { kind: 'contract', status: Number(violation[1]), reason: message };
    if (name === 'TimeoutError' || name === 'AbortError')
      return { kind: 'failed', reason: `no response within ${timeoutMs} ms` };
    // fetch validates the method, URL and body before sending; undici refuses some headers (Expect,
    // Upgrade, Transfer-Encoding, control characters) only when dispatching.
    const code = typeof error === 'object' && error !== null && 'cause' in error ? field(error.cause, 'code') : '';
    if (
      (name === 'TypeError' && message !== 'fetch failed') ||
      code === 'UND_ERR_INVALID_ARG' ||
      code === 'UND_ERR_NOT_SUPPORTED'
    ) {
      return { kind: 'refused', reason: describe(error) };
    }
    return { kind: 'failed', reason: describe(error) };
  }
}

function sendWithHttp(origin: string, request: WireRequest, timeoutMs: number): Promise<Outcome> {
  const { hostname, port } = new URL(origin);
  return new Promise((resolve) => {
    let settled = false;
    const settle = (outcome: Outcome): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(outcome);
    };
    let client: http.ClientRequest | undefined;
    const timer = setTimeout(() => {
      settle({ kind: 'failed', reason: `no response within ${timeoutMs} ms` });
      client?.destroy();
    }, timeoutMs);
    try {
      client = http.request({ hostname, port, method: request.method, path: request.target, agent: false });
      client.on('error', (error) => settle({ kind: 'failed', reason: describe(error) }));
      // Repeated names go out as repeated field lines, whatever their case.
      const grouped = new Map<string, { name: string; values: string[] }>();
      for (const [name, value] of request.headers) {
        const group = grouped.get(name.toLowerCase()) ?? { name, values: [] };
        group.values.push(value);
        grouped.set(name.toLowerCase(), group);
      }
      for (const { name, values } of grouped.values())
        client.setHeader(name, values.length === 1 ? (values[0] ?? '') : values);
      const body = request.body ?? new Uint8Array(0);
      if (!request.chunked && request.body !== undefined) client.setHeader('Content-Length', String(body.length));
    } catch (error) {
      // ERR_INVALID_HTTP_TOKEN, ERR_INVALID_CHAR, ERR_UNESCAPED_CHARACTERS: node:http will not send it.
      client?.destroy();
      settle({ kind: 'refused', reason: describe(error) });
      return;
    }
    client.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', (error) => settle({ kind: 'failed', reason: describe(error) }));
      response.on('end', () => {
        const headers = new Map<string, string>();
        for (const [name, value] of Object.entries(response.headers)) {
          if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
        }
        settle({
          kind: 'response',
          response: { status: response.statusCode ?? 0, headers, body: Buffer.concat(chunks).toString('utf8') },
        });
      });
    });
    const body = request.body;
    if (body !== undefined && request.chunked) {
      const half = Math.floor(body.length / 2);
      client.write(body.subarray(0, half));
      client.end(body.subarray(half));
    } else {
      client.end(body);
    }
  });
}

/** A curl command that sends the same request (bodies longer than 300 bytes are described, not spelled out). */
export function curl(origin: string, request: WireRequest): string {
  const target = sentTarget(origin, request) ?? request.target;
  const parts = [
    'curl -si --path-as-is',
    request.method === 'GET' ? '' : `-X ${request.method}`,
    quote(origin + shorten(target, 300)),
  ];
  for (const [name, value] of request.headers) parts.push(`-H ${quote(`${name}: ${shorten(value, 120)}`)}`);
  if (request.chunked) parts.push(`-H 'Transfer-Encoding: chunked'`);
  if (request.body !== undefined) {
    const text = Buffer.from(request.body).toString('utf8');
    const printable =
      request.body.length <= 300 &&
      Buffer.from(text, 'utf8').equals(Buffer.from(request.body)) &&
      !/[^\P{Cc}\t\n\v\f\r]/u.test(text);
    parts.push(
      printable
        ? `--data-binary ${quote(text)}`
        : `--data-binary @body.bin  # ${request.body.length} bytes, starting ${JSON.stringify(text.slice(0, 80))}`,
    );
  }
  return parts.filter((part) => part !== '').join(' ');
}

function quote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

function shorten(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…(${text.length} chars)`;
}

function field(value: unknown, key: string): string {
  return typeof value === 'object' && value !== null && key in value ? String(Reflect.get(value, key)) : '';
}

function hasCode(value: unknown): value is { code: string } {
  return typeof value === 'object' && value !== null && 'code' in value && typeof value.code === 'string';
}

/** Not `instanceof Error`: undici's errors may come from another realm than Jest's VM context. */
function describe(error: unknown): string {
  if (typeof error !== 'object' || error === null) return String(error);
  const name = 'name' in error ? String(error.name) : 'Error';
  const message = 'message' in error ? String(error.message) : JSON.stringify(error);
  const cause =
    'cause' in error && error.cause !== undefined
      ? ` (cause: ${describe(error.cause)}${hasCode(error.cause) ? `, ${error.cause.code}` : ''})`
      : '';
  return `${name}: ${message}${cause}`;
}
