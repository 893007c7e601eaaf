import { answerHeaders } from '../../../../../src/interface/http/platform/answer-headers.js';
import { ShutdownState } from '../../../../../src/interface/http/platform/shutdown-state.js';

describe('answerHeaders', () => {
  /** Runs the middleware on a conditional GET of `path`; the headers set and the request's headers left. */
  function run(path: string, shutdown = new ShutdownState()) {
    const set: Record<string, string> = {};
    const request = { path, headers: { 'if-none-match': '*', 'if-modified-since': 'Sat, 28 Nov 2026 00:00:00 GMT' } };
    const response = { setHeader: (name: string, value: string) => (set[name] = value) };
    let nexts = 0;
    answerHeaders(shutdown)(request as never, response as never, () => nexts++);
    return { set, requestHeaders: request.headers, nexts };
  }

  it.each(['/v1', '/v1/', '/v1/pets', '/v1/pets/42', '/v1/nowhere'])(
    'marks the answer to %s not to be stored, and drops its conditions (no validator is ever sent)',
    (path) => {
      const { set, requestHeaders, nexts } = run(path);

      expect(set).toEqual({ 'Cache-Control': 'no-store' });
      expect(requestHeaders).toEqual({});
      expect(nexts).toBe(1);
    },
  );

  it.each(['/healthz', '/docs', '/openapi.json', '/', '/v1x', '/V1/pets'])('leaves %s as it is', (path) => {
    const { set, requestHeaders, nexts } = run(path);

    expect(set).toEqual({});
    expect(Object.keys(requestHeaders)).toEqual(['if-none-match', 'if-modified-since']);
    expect(nexts).toBe(1);
  });

  it('asks the client to close the connection once the server is closing, on every path', () => {
    const shutdown = new ShutdownState();
    shutdown.closing = true;

    expect(run('/healthz', shutdown).set).toEqual({ Connection: 'close' });
    expect(run('/v1/pets', shutdown).set).toEqual({ 'Cache-Control': 'no-store', Connection: 'close' });
  });
});
