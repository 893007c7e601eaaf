import pTimeout from 'p-timeout';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { DatabasePool } from '../../../application/platform/database-pool.js';
import { Readiness } from '../../../application/platform/readiness.js';
import { ReplicaStatus } from '../../../application/platform/replica-status.js';
import { RATE_LIMIT_POLICIES, type RateLimitPolicy } from '../../../application/platform/rate-limits.js';

/** The policy a 429 names in its RateLimit header, or `unknown` for one that names none. */
export type RefusingPolicy = RateLimitPolicy | 'unknown';

const READINESS_DEADLINE_MS = 1000;

export type MetricSources = { pool: DatabasePool; readiness: Readiness; replicas: ReplicaStatus };

/**
 * The service's Prometheus metrics, in a registry of its own (not prom-client's global one, so
 * that several apps in one process, as in the tests, do not collide); the products add theirs to
 * `registry`. Gauges are read at scrape time, so nothing is measured between scrapes.
 */
export class HttpMetrics {
  readonly registry = new Registry();
  private readonly duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from request to the end of the response, by method, route and status.',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  /**
   * The histogram's `_count` under the name dashboards and alerts expect, read from it at scrape
   * time: each request updates one metric, not two.
   */
  private readonly requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by method, route and status.',
    labelNames: ['method', 'route', 'status'],
    registers: [this.registry],
    collect: countsOf(this.duration),
  });
  private readonly rateLimited = new Counter({
    name: 'http_requests_rate_limited_total',
    help: 'Requests refused with 429, by the rate-limit policy that refused them (per-key, failed-auth; unknown when the answer named none).',
    labelNames: ['policy'],
    registers: [this.registry],
  });

  /**
   * `readinessDeadlineMs`: a database that hangs must not hang the scrape (Prometheus would count
   * the instance down); past it, db_up is 0.
   */
  constructor({ pool, readiness, replicas }: MetricSources, readinessDeadlineMs = READINESS_DEADLINE_MS) {
    collectDefaultMetrics({ register: this.registry });
    // Every policy's series exists from the start, so that rate() sees the first refusal.
    for (const policy of [...RATE_LIMIT_POLICIES, 'unknown']) this.rateLimited.inc({ policy }, 0);
    new Gauge({
      name: 'db_pool_connections',
      help: 'Connections of the PostgreSQL pool, by state: total, idle, in_use (lent to a query); waiting is the number of requests waiting for one, kept for existing dashboards (see db_pool_waiting_requests).',
      labelNames: ['state'],
      registers: [this.registry],
      collect() {
        const usage = pool.usage();
        this.set({ state: 'total' }, usage.total);
        this.set({ state: 'idle' }, usage.idle);
        this.set({ state: 'in_use' }, usage.total - usage.idle);
        this.set({ state: 'waiting' }, usage.waiting);
      },
    });
    new Gauge({
      name: 'db_pool_waiting_requests',
      help: 'Queries waiting for a connection of the PostgreSQL pool (all connections in use).',
      registers: [this.registry],
      collect() {
        this.set(pool.usage().waiting);
      },
    });
    new Gauge({
      name: 'db_up',
      help: 'Whether PostgreSQL answered the readiness check (SELECT 1) made at this scrape within a second: 1 or 0.',
      registers: [this.registry],
      async collect() {
        this.set((await answersWithin(readiness.check(), readinessDeadlineMs)) ? 1 : 0);
      },
    });
    // Without replicas these have no series at all: nothing to alert on, nothing to draw.
    new Gauge({
      name: 'db_replica_lag_seconds',
      help: 'How far each streaming replica is behind the primary, as last measured (+Inf: beyond what the checks can tell).',
      labelNames: ['replica'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const replica of replicas.replicas()) this.set({ replica: replica.name }, replica.lagMs / 1000);
      },
    });
    new Gauge({
      name: 'db_replica_usable',
      help: 'Whether each streaming replica serves reads now (answers, within the lag bound): 1 or 0.',
      labelNames: ['replica'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const replica of replicas.replicas()) this.set({ replica: replica.name }, replica.usable ? 1 : 0);
      },
    });
    new Gauge({
      name: 'db_replica_max_lag_seconds',
      help: 'The lag bound (DATABASE_REPLICA_MAX_LAG_SECONDS) past which each replica serves no reads; one series per replica, so a rule compares it with the lag as it is.',
      labelNames: ['replica'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const replica of replicas.replicas()) this.set({ replica: replica.name }, replicas.maxLagMs() / 1000);
      },
    });
  }

  /** `route` is the route pattern (/v1/pets/:petId), never the raw path, so label values stay few. */
  observe(method: string, route: string, status: number, seconds: number): void {
    this.duration.observe({ method, route, status: String(status) }, seconds);
  }

  refused(policy: RefusingPolicy): void {
    this.rateLimited.inc({ policy });
  }
}

type RequestLabels = 'method' | 'route' | 'status';

/** A counter's collect(): the counts of the histogram's series, as they are now. */
function countsOf(histogram: Histogram<RequestLabels>): (this: Counter<RequestLabels>) => Promise<void> {
  return async function (this: Counter<RequestLabels>) {
    const { name, values } = await histogram.get();
    this.reset();
    for (const { metricName, labels, value } of values) {
      if (metricName === `${name}_count`) this.inc(labels, value);
    }
  };
}

function answersWithin(work: Promise<void>, ms: number): Promise<boolean> {
  const answered = work.then(
    () => true,
    () => false,
  );
  return pTimeout(answered, { milliseconds: ms, fallback: () => false });
}
