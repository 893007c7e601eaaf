import { DatabasePool, type PoolUsage } from '../../src/application/platform/database-pool.js';
import { Readiness } from '../../src/application/platform/readiness.js';
import { type ReplicaState, ReplicaStatus } from '../../src/application/platform/replica-status.js';
import { StoreUnavailableError } from '../../src/application/platform/store-unavailable-error.js';
import { HttpMetrics } from '../../src/interface/http/platform/metrics.js';

export class FixedPool extends DatabasePool {
  constructor(public current: PoolUsage = { total: 0, idle: 0, waiting: 0 }) {
    super();
  }

  usage(): PoolUsage {
    return this.current;
  }
}

export class SwitchableReadiness extends Readiness {
  state: 'answering' | 'refusing' | 'silent' = 'answering';

  check(): Promise<void> {
    if (this.state === 'answering') return Promise.resolve();
    if (this.state === 'refusing') return Promise.reject(new StoreUnavailableError());
    return new Promise(() => undefined);
  }
}

export class FixedReplicas extends ReplicaStatus {
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

/** HttpMetrics on fixed sources, its readiness deadline 20 ms. */
export function metricsWith(
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
export async function samples(metrics: HttpMetrics, name: string): Promise<string[]> {
  const text = await metrics.registry.getSingleMetricAsString(name);
  return text.split('\n').filter((line) => line.length > 0 && !line.startsWith('#'));
}
