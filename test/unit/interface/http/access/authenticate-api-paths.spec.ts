import { StoreUnavailableError } from '../../../../../src/application/platform/store-unavailable-error.js';
import { authenticateApiPaths } from '../../../../../src/interface/http/access/authenticate-api-paths.js';
import { ApiError } from '../../../../../src/interface/http/platform/api-error.js';
import { RefusedRequestsLog } from '../../../../../src/interface/http/platform/refused-requests-log.js';

describe('authenticateApiPaths', () => {
  type Authenticate = Parameters<typeof authenticateApiPaths>[0]['use'];
  const requestFor = (path: string) => ({ path, method: 'GET', originalUrl: path, ip: '203.0.113.9', headers: {} });

  function responseSpy() {
    const response = {
      headersSent: false,
      statusCode: 200,
      body: undefined as string | undefined,
      removeHeader: () => undefined,
      writeHead(status: number) {
        response.statusCode = status;
      },
      end(body?: string) {
        response.body = body;
      },
    };
    return response;
  }

  /** Runs the middleware on a path with an authentication that answers `outcome`; what happened. */
  function run(path: string, outcome: unknown = undefined, headersSent = false) {
    const log = new RefusedRequestsLog();
    const authenticated: string[] = [];
    const authenticate: Authenticate = (request, _response, next) => {
      authenticated.push(request.path);
      next(outcome);
    };
    const response = responseSpy();
    response.headersSent = headersSent;
    const nexts: unknown[][] = [];
    authenticateApiPaths({ use: authenticate }, log)(
      requestFor(path) as never,
      response as never,
      (...args: unknown[]) => {
        nexts.push(args);
      },
    );
    return { authenticated, nexts, response, counted: log.take() };
  }

  it.each(['/v1', '/v1/', '/v1/pets', '/v1/pets/42', '/v1/nowhere'])('authenticates %s', (path) => {
    const { authenticated, nexts } = run(path);

    expect(authenticated).toEqual([path]);
    expect(nexts).toEqual([[]]);
  });

  it.each(['/healthz', '/metrics', '/openapi.json', '/', '/v1x', '/v10/pets', '/V1/pets', '/api/v1/pets'])(
    'lets %s through without authentication: it is not under /v1 as the case-sensitive routes read it',
    (path) => {
      const { authenticated, nexts } = run(path);

      expect(authenticated).toEqual([]);
      expect(nexts).toEqual([[]]);
    },
  );

  it('answers a refusal with the Error body, counted for the address, and goes no further', () => {
    const { nexts, response, counted } = run('/v1/pets', new ApiError(401, 'Invalid API key'));

    expect(nexts).toEqual([]);
    expect(response.statusCode).toBe(401);
    expect(JSON.parse(response.body ?? '')).toEqual({ code: 'unauthorized', message: 'Invalid API key', status: 401 });
    expect(counted).toEqual([{ address: '203.0.113.9', statuses: { '401': 1 } }]);
  });

  it('answers a key store that cannot be reached with 503, not counted as a refusal', () => {
    const { response, counted } = run('/v1/pets', new StoreUnavailableError());

    expect(response.statusCode).toBe(503);
    expect(counted).toEqual([]);
  });

  it('passes a failure on to Express once an answer is under way', () => {
    const error = new ApiError(429, 'Too many');
    const { nexts, counted } = run('/v1/pets', error, true);

    expect(nexts).toEqual([[error]]);
    expect(counted).toEqual([]);
  });
});
