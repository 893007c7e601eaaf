import { FixedPool, FixedReplicas, metricsWith, samples, SwitchableReadiness } from '../../../../support/metrics.js';

describe('HttpMetrics.observe', () => {
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
