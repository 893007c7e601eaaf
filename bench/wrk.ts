/**
 * The load generator: wrk (C, event loop), one thread pinned to CPU 1, so that the client costs
 * little and never takes CPU from the server it measures. A generated Lua script counts the
 * status codes and prints one JSON line at the end.
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

export type WrkRequest = {
  url: string;
  connections: number;
  /** Each connection waits this long after an answer before its next request (wrk's delay()); latency counts from the send. */
  delayMs?: number;
  seconds: number;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  /** Each request asks for `pathPrefix` and a random id from 1 to `upTo`, instead of the URL's path. */
  random?: { pathPrefix: string; upTo: number };
  /** CPU list for `taskset -c`, or null to run unpinned. */
  cpu: string | null;
};

export type WrkResult = {
  requests: number;
  durationUs: number;
  /** Socket errors, plus `status`: wrk's count of answers with a status above 399. */
  errors: { connect: number; read: number; write: number; status: number; timeout: number };
  latencyUs: { p50: number; p99: number };
  statuses: Record<string, number>;
};

const MARKER = 'WRK_RESULT ';

/** wrk must be on the PATH: installed here when running as root on Debian/Ubuntu, else the process exits. */
export function ensureWrk(): void {
  if (hasWrk()) return;
  if (process.getuid?.() === 0 && spawnSync('sh', ['-c', 'command -v apt-get'], { stdio: 'ignore' }).status === 0) {
    console.log('bench: wrk is missing; installing it with apt-get');
    spawnSync('sh', ['-c', 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk'], {
      stdio: 'inherit',
    });
    if (hasWrk()) return;
  }
  console.error(
    'bench: wrk is missing: install it (Debian/Ubuntu: sudo apt-get install wrk; macOS: brew install wrk) and run again',
  );
  process.exit(1);
}

export async function runWrk(request: WrkRequest): Promise<WrkResult> {
  const dir = await mkdtemp(path.join(tmpdir(), 'petstore-wrk-'));
  try {
    const script = path.join(dir, 'scenario.lua');
    await writeFile(script, luaScript(request));
    const headers =
      request.body === undefined
        ? Object.entries(request.headers).flatMap(([name, value]) => ['-H', `${name}: ${value}`])
        : [];
    const wrk = [
      'wrk',
      '-t1',
      `-c${request.connections}`,
      `-d${Math.max(1, Math.round(request.seconds))}s`,
      '--timeout',
      '10s',
      '-s',
      script,
      ...headers,
      request.url,
    ];
    const [file = 'wrk', ...args] = request.cpu === null ? wrk : ['taskset', '-c', request.cpu, ...wrk];
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(file, args, { timeout: (request.seconds + 30) * 1000 }, (error, out, err) =>
        error ? reject(new Error(`wrk failed: ${error.message}\n${err}`)) : resolve(out),
      ),
    );
    const line = stdout.split('\n').find((text) => text.startsWith(MARKER));
    if (line === undefined) throw new Error(`wrk printed no result:\n${stdout}`);
    return parseResult(line.slice(MARKER.length));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function hasWrk(): boolean {
  return spawnSync('sh', ['-c', 'command -v wrk'], { stdio: 'ignore' }).status === 0;
}

/**
 * Headers go through -H, except with a body, where the script sets method, body and headers.
 * response() counts statuses per thread; done() sums them over the threads and prints the figures.
 */
function luaScript({ method, headers, body, random, delayMs }: WrkRequest): string {
  const lines: string[] = [];
  if (body !== undefined) {
    lines.push(`wrk.method = ${luaString(method)}`, `wrk.body = ${luaString(body)}`);
    for (const [name, value] of Object.entries(headers))
      lines.push(`wrk.headers[${luaString(name)}] = ${luaString(value)}`);
  } else if (method !== 'GET') {
    lines.push(`wrk.method = ${luaString(method)}`);
  }
  if (random !== undefined) {
    lines.push(
      `request = function() return wrk.format(nil, ${luaString(random.pathPrefix)} .. math.random(${Math.trunc(random.upTo)})) end`,
    );
  }
  if (delayMs !== undefined) lines.push(`function delay() return ${Math.trunc(delayMs)} end`);
  return `${lines.join('\n')}
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) math.randomseed(os.time()); statuses = {} end
function response(status) statuses[status] = (statuses[status] or 0) + 1 end
function done(summary, latency)
  local counts = {}
  for _, thread in ipairs(threads) do
    for status, count in pairs(thread:get("statuses")) do counts[status] = (counts[status] or 0) + count end
  end
  local parts = {}
  for status, count in pairs(counts) do table.insert(parts, string.format('"%d":%d', status, count)) end
  local e = summary.errors
  io.write(string.format('${MARKER}{"requests":%d,"durationUs":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},"latencyUs":{"p50":%d,"p99":%d},"statuses":{%s}}\\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    math.floor(latency:percentile(50)), math.floor(latency:percentile(99)), table.concat(parts, ",")))
end
`;
}

/** A Lua string literal of the UTF-8 bytes: printable ASCII as is, anything else as \ddd. */
function luaString(text: string): string {
  const bytes = [...Buffer.from(text, 'utf8')];
  return `"${bytes.map((byte) => (byte >= 0x20 && byte < 0x7f && byte !== 0x22 && byte !== 0x5c ? String.fromCharCode(byte) : `\\${String(byte).padStart(3, '0')}`)).join('')}"`;
}

function parseResult(json: string): WrkResult {
  const data: unknown = JSON.parse(json);
  const number = (value: unknown): number => (typeof value === 'number' ? value : NaN);
  const field = (value: unknown, name: string): unknown =>
    typeof value === 'object' && value !== null ? Reflect.get(value, name) : undefined;
  const errors = field(data, 'errors');
  const latency = field(data, 'latencyUs');
  const statuses = field(data, 'statuses');
  return {
    requests: number(field(data, 'requests')),
    durationUs: number(field(data, 'durationUs')),
    errors: {
      connect: number(field(errors, 'connect')),
      read: number(field(errors, 'read')),
      write: number(field(errors, 'write')),
      status: number(field(errors, 'status')),
      timeout: number(field(errors, 'timeout')),
    },
    latencyUs: { p50: number(field(latency, 'p50')), p99: number(field(latency, 'p99')) },
    statuses: Object.fromEntries(
      Object.entries(typeof statuses === 'object' && statuses !== null ? statuses : {}).map(([status, count]) => [
        status,
        number(count),
      ]),
    ),
  };
}
