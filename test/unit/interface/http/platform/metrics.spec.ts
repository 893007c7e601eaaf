import { EventEmitter } from 'node:events';
import { DatabasePool, type PoolUsage } from '../../../../../src/application/platform/database-pool.js';
import { Readiness } from '../../../../../src/application/platform/readiness.js';
import { type ReplicaState, ReplicaStatus } from '../../../../../src/application/platform/replica-status.js';
import {
  HttpMetrics,
  observeRequests,
  type ObservedResponse,
  refusingPolicy,
} from '../../../../../src/interface/http/platform/metrics.js';
import { StoreUnavailableError } from '../../../../../src/application/platform/store-unavailable-error.js';

class FixedPool extends DatabasePool {
  constructor(public current: PoolUsage = { total: 0, idle: 0, waiting: 0 }) {
    super();
  }

  usage(): PoolUsage {
    return this.current;
  }
}

class SwitchableReadiness extends Readiness {
  state: 'answering' | 'refusing' | 'silent' = 'answering';

  check(): Promise<void> {
    if (this.state === 'answering') return Promise.resolve();
    if (this.state === 'refusing') return Promise.reject(new StoreUnavailableError());
    return new Promise(() => undefined);
  }
}

class FixedReplicas extends ReplicaStatus {
  constructor(
    public current: ReplicaState[] = [],
    private readonly boundMs = 10_000,
  ) {
    super();
  }

  replicas(): ReplicaState[] {
    return this.current;
  }

  maxLagMs(): number {
    return this.boundMs;
  }
}

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

function metricsWith(
  sources: { pool?: DatabasePool; readiness?: Readiness; replicas?: ReplicaStatus } = {},
): HttpMetrics {
  return new HttpMetrics(
    {
      pool: sources.pool ?? new FixedPool(),
      readiness: sources.readiness ?? new SwitchableReadiness(),
      replicas: sources.replicas ?? new FixedReplicas(),
    },
    20,
  );
}

/** `name{labels} value` lines of one metric family, as /metrics serves them. */
async function samples(metrics: HttpMetrics, name: string): Promise<string[]> {
  const text = await metrics.registry.getSingleMetricAsString(name);
  return text.split('\n').filter((line) => line.length > 0 && !line.startsWith('#'));
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
  it('keeps http_requests_total a counter across scrapes: the same totals when nothing happened, more after', async () => {
    const metrics = metricsWith();
    metrics.observe('GET', '/v1/pets', 200, 0.002);
    const first = await samples(metrics, 'http_requests_total');
    expect(await samples(metrics, 'http_requests_total')).toEqual(first);

    metrics.observe('GET', '/v1/pets', 200, 0.002);
    metrics.observe('GET', '/v1/pets/:petId', 404, 0.001);

    expect(await samples(metrics, 'http_requests_total')).toEqual([
      'http_requests_total{method="GET",route="/v1/pets",status="200"} 2',
      'http_requests_total{method="GET",route="/v1/pets/:petId",status="404"} 1',
    ]);
  });

  it('counts and times each request under its own method, route and status, however often a series recurs', async () => {
    const metrics = metricsWith();
    metrics.observe('GET', '/v1/pets', 200, 0.002);
    metrics.observe('GET', '/v1/pets', 200, 0.02);
    metrics.observe('GET', '/v1/pets', 401, 0.001);
    metrics.observe('POST', '/v1/pets', 200, 0.5);

    expect(await samples(metrics, 'http_requests_total')).toEqual([
      'http_requests_total{method="GET",route="/v1/pets",status="200"} 2',
      'http_requests_total{method="GET",route="/v1/pets",status="401"} 1',
      'http_requests_total{method="POST",route="/v1/pets",status="200"} 1',
    ]);
    const counts = (await samples(metrics, 'http_request_duration_seconds')).filter((line) => line.includes('_count'));
    expect(counts).toEqual([
      'http_request_duration_seconds_count{method="GET",route="/v1/pets",status="200"} 2',
      'http_request_duration_seconds_count{method="GET",route="/v1/pets",status="401"} 1',
      'http_request_duration_seconds_count{method="POST",route="/v1/pets",status="200"} 1',
    ]);
    expect(await samples(metrics, 'http_request_duration_seconds')).toContain(
      'http_request_duration_seconds_sum{method="GET",route="/v1/pets",status="200"} 0.022',
    );
  });

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

describe('HttpMetrics gauges, read at scrape time', () => {
  it('gives the pool connections in use and the queries waiting for one', async () => {
    const pool = new FixedPool({ total: 10, idle: 3, waiting: 4 });
    const metrics = metricsWith({ pool });

    expect(await samples(metrics, 'db_pool_connections')).toEqual([
      'db_pool_connections{state="total"} 10',
      'db_pool_connections{state="idle"} 3',
      'db_pool_connections{state="in_use"} 7',
      'db_pool_connections{state="waiting"} 4',
    ]);
    expect(await samples(metrics, 'db_pool_waiting_requests')).toEqual(['db_pool_waiting_requests 4']);

    pool.current = { total: 2, idle: 2, waiting: 0 };
    expect(await samples(metrics, 'db_pool_waiting_requests')).toEqual(['db_pool_waiting_requests 0']);
    expect(await samples(metrics, 'db_pool_connections')).toContain('db_pool_connections{state="in_use"} 0');
  });

  it('says whether the database answered at this scrape, within a deadline', async () => {
    const readiness = new SwitchableReadiness();
    const metrics = metricsWith({ readiness });

    expect(await samples(metrics, 'db_up')).toEqual(['db_up 1']);
    readiness.state = 'refusing';
    expect(await samples(metrics, 'db_up')).toEqual(['db_up 0']);
    readiness.state = 'silent';
    expect(await samples(metrics, 'db_up')).toEqual(['db_up 0']);
    readiness.state = 'answering';
    expect(await samples(metrics, 'db_up')).toEqual(['db_up 1']);
  });

  it('gives each replica its lag in seconds, whether it serves reads, and the bound', async () => {
    const replicas = new FixedReplicas(
      [
        { name: 'replica-1:5432', usable: true, lagMs: 250 },
        { name: 'replica-2:5432', usable: false, lagMs: Number.POSITIVE_INFINITY },
      ],
      5000,
    );
    const metrics = metricsWith({ replicas });

    expect(await samples(metrics, 'db_replica_lag_seconds')).toEqual([
      'db_replica_lag_seconds{replica="replica-1:5432"} 0.25',
      'db_replica_lag_seconds{replica="replica-2:5432"} +Inf',
    ]);
    expect(await samples(metrics, 'db_replica_usable')).toEqual([
      'db_replica_usable{replica="replica-1:5432"} 1',
      'db_replica_usable{replica="replica-2:5432"} 0',
    ]);
    expect(await samples(metrics, 'db_replica_max_lag_seconds')).toEqual([
      'db_replica_max_lag_seconds{replica="replica-1:5432"} 5',
      'db_replica_max_lag_seconds{replica="replica-2:5432"} 5',
    ]);
  });

  it('has no replica series without replicas', async () => {
    const metrics = metricsWith({ replicas: new FixedReplicas([]) });

    for (const name of ['db_replica_lag_seconds', 'db_replica_usable', 'db_replica_max_lag_seconds'])
      expect(await samples(metrics, name)).toEqual([]);
  });
});
