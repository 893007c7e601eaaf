import { EventEmitter } from 'node:events';
import type { HttpMetrics } from '../../../../../src/interface/http/platform/metrics.js';
import {
  observeRequests,
  type ObservedResponse,
  refusingPolicy,
} from '../../../../../src/interface/http/platform/request-metrics.js';
import { metricsWith, samples } from '../../../../support/metrics.js';

/** A response as the observer sees it: a status, the headers set on it, and its close event. */
class FakeResponse extends EventEmitter implements ObservedResponse {
  writableFinished = true;
  private readonly headers = new Map<string, string>();

  constructor(public statusCode: number) {
    super();
  }

  setHeader(name: string, value: string): this {
    this.headers.set(name.toLowerCase(), value);
    return this;
  }

  getHeader(name: string): string | undefined {
    return this.headers.get(name.toLowerCase());
  }
}

function answer(metrics: HttpMetrics, response: FakeResponse): void {
  observeRequests(metrics)({ method: 'GET' }, response, () => undefined);
  response.emit('close');
}

describe('refusingPolicy', () => {
  it.each([
    ['"failed-auth";r=0;t=30', 'failed-auth'],
    ['"per-key";r=0;t=12', 'per-key'],
    [' "per-key";r=0;t=12, "failed-auth";r=5;t=60', 'per-key'],
    ['"failed-auth";r=0;t=30, "per-key";r=100;t=60', 'failed-auth'],
    ['per-key;r=0;t=1', 'per-key'],
  ])('reads the first item of %j as the policy %s', (header, policy) => {
    expect(refusingPolicy(header)).toBe(policy);
  });

  it.each([[undefined], [''], ['"burst";r=0;t=1'], ['"per-key-2";r=0'], ['r=0;t=30'], [7]])(
    'answers unknown for %j: no header, or a policy the service does not have',
    (header) => {
      expect(refusingPolicy(header)).toBe('unknown');
    },
  );

  it('reads the first of several header lines', () => {
    expect(refusingPolicy(['"failed-auth";r=0;t=9', '"per-key";r=0;t=1'])).toBe('failed-auth');
  });
});

describe('observeRequests', () => {
  it('counts each 429 under the policy its RateLimit header names, and unknown without one', async () => {
    const metrics = metricsWith();

    answer(metrics, new FakeResponse(429).setHeader('RateLimit', '"failed-auth";r=0;t=30'));
    answer(metrics, new FakeResponse(429).setHeader('RateLimit', '"failed-auth";r=0;t=29'));
    answer(metrics, new FakeResponse(429).setHeader('RateLimit', '"per-key";r=0;t=3'));
    answer(metrics, new FakeResponse(429));
    answer(metrics, new FakeResponse(200).setHeader('RateLimit', '"per-key";r=10;t=3'));

    expect(await samples(metrics, 'http_requests_rate_limited_total')).toEqual([
      'http_requests_rate_limited_total{policy="per-key"} 1',
      'http_requests_rate_limited_total{policy="failed-auth"} 2',
      'http_requests_rate_limited_total{policy="unknown"} 1',
    ]);
  });

  it('does not count a 429 whose client left before it was sent (that is a 499)', async () => {
    const metrics = metricsWith();
    const response = new FakeResponse(429).setHeader('RateLimit', '"per-key";r=0;t=3');
    response.writableFinished = false;

    answer(metrics, response);

    expect(await samples(metrics, 'http_requests_rate_limited_total')).toContain(
      'http_requests_rate_limited_total{policy="per-key"} 0',
    );
    expect((await samples(metrics, 'http_requests_total')).join('\n')).toContain('status="499"} 1');
  });
});
