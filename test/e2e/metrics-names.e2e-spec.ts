import { readFileSync } from 'node:fs';
import { parser } from '@prometheus-io/lezer-promql';
import { parse as parseYaml } from 'yaml';
import { FlexibleRateLimits } from '../../src/infrastructure/platform/rate-limits/flexible-rate-limits.js';
import { openTestDatabase, type TestDatabase } from '../support/database.js';
import { authorized, startServer, type TestServer } from '../support/server.js';

// The alerting rules (deploy/prometheus/alerts.yml) and the Grafana dashboard
// (deploy/grafana/petstore.json) must name only metrics the service serves: a renamed metric
// would otherwise leave an alert that never fires and a panel that stays empty.

/** Series Prometheus makes itself, not the service: `up` per target, ALERTS per firing alert. */
const MADE_BY_PROMETHEUS = new Set(['up', 'ALERTS']);

/** Metric families in /metrics text, by name: `# TYPE <name> <type>`. */
function familiesOf(text: string): Map<string, string> {
  const families = new Map<string, string>();
  for (const match of text.matchAll(/^# TYPE (\S+) (\S+)$/gm))
    if (match[1] !== undefined && match[2] !== undefined) families.set(match[1], match[2]);
  return families;
}

/**
 * Whether a series name is served: a family itself, or one of the series a histogram
 * (`_bucket`, `_sum`, `_count`) or a summary (`_sum`, `_count`) family is exposed as.
 */
function isServed(name: string, families: Map<string, string>): boolean {
  if (MADE_BY_PROMETHEUS.has(name)) return true;
  const type = families.get(name);
  if (type !== undefined) return type !== 'histogram';
  const suffix = /_(bucket|sum|count)$/.exec(name);
  if (suffix?.[1] === undefined) return false;
  const baseType = families.get(name.slice(0, suffix.index));
  return baseType === 'histogram' || (baseType === 'summary' && suffix[1] !== 'bucket');
}

/**
 * The metric names a PromQL expression selects, from Prometheus's own grammar (lezer-promql):
 * the name of each vector selector, or its `__name__` matcher. Grafana's interval variables are
 * put in as a duration first; a parse error fails the test.
 */
function metricNames(expr: string): string[] {
  const query = expr.replace(/\$__(rate_interval|interval|range)\b/g, '5m');
  const names: string[] = [];
  const errors: number[] = [];
  parser.parse(query).iterate({
    enter(node) {
      if (node.type.isError) errors.push(node.from);
      if (node.name === 'Identifier' && node.node.parent?.name === 'VectorSelector')
        names.push(query.slice(node.from, node.to));
      if (node.name === 'UnquotedLabelMatcher') {
        const matcher = /^__name__\s*=\s*"([^"]+)"$/.exec(query.slice(node.from, node.to));
        if (matcher?.[1] !== undefined) names.push(matcher[1]);
      }
    },
  });
  if (errors.length > 0) throw new Error(`not PromQL (at ${errors.join(', ')}): ${expr}`);
  return names;
}

type Named = { where: string; expr: string };

function ruleExpressions(): Named[] {
  const rules: unknown = parseYaml(readFileSync('deploy/prometheus/alerts.yml', 'utf8'));
  return listAt(rules, 'groups').flatMap((group) =>
    listAt(group, 'rules').map((rule) => ({
      where: `rule ${stringAt(rule, 'alert') ?? stringAt(rule, 'record')}`,
      expr: stringAt(rule, 'expr') ?? '',
    })),
  );
}

/** Every panel's targets (rows' panels too), the template variables' label_values() and the annotations. */
function dashboardExpressions(): Named[] {
  const dashboard: unknown = JSON.parse(readFileSync('deploy/grafana/petstore.json', 'utf8'));
  const panels = listAt(dashboard, 'panels').flatMap((panel) => [panel, ...listAt(panel, 'panels')]);
  const targets = panels.flatMap((panel) =>
    listAt(panel, 'targets').map((target) => ({
      where: `panel "${stringAt(panel, 'title')}"`,
      expr: stringAt(target, 'expr') ?? '',
    })),
  );
  const variables = listAt(fieldOf(dashboard, 'templating'), 'list').flatMap((variable) => {
    const definition = stringAt(variable, 'definition');
    const selector = definition === null ? null : /^label_values\((.+),\s*\w+\)$/.exec(definition)?.[1];
    return selector == null ? [] : [{ where: `variable ${stringAt(variable, 'name')}`, expr: selector }];
  });
  const annotations = listAt(fieldOf(dashboard, 'annotations'), 'list').flatMap((annotation) => {
    const expr = stringAt(annotation, 'expr');
    return expr === null ? [] : [{ where: `annotation ${stringAt(annotation, 'name')}`, expr }];
  });
  return [...targets, ...variables, ...annotations];
}

function fieldOf(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? Reflect.get(value, key) : undefined;
}

function listAt(value: unknown, key: string): unknown[] {
  const list = fieldOf(value, key);
  return Array.isArray(list) ? list : [];
}

function stringAt(value: unknown, key: string): string | null {
  const text = fieldOf(value, key);
  return typeof text === 'string' ? text : null;
}

describe('names of metrics in PromQL', () => {
  it('finds the selected metrics through functions, aggregations, label matchers and binary operators', () => {
    expect(
      metricNames(
        'histogram_quantile(0.99, sum by (job, le) (rate(a_bucket{job="x", route!="b_total"}[$__rate_interval]))) > on(job) group_left c unless absent({__name__="d"}) or e offset 5m',
      ),
    ).toEqual(['a_bucket', 'c', 'd', 'e']);
  });

  it('refuses what is not PromQL', () => {
    expect(() => metricNames('sum(rate(x[5m])')).toThrow('not PromQL');
  });

  it("serves a histogram's _bucket, _sum and _count, not its bare name, and no suffix a family does not have", () => {
    const families = new Map([
      ['latency_seconds', 'histogram'],
      ['requests_total', 'counter'],
      ['sizes', 'summary'],
    ]);

    const served = ['latency_seconds_bucket', 'latency_seconds_count', 'requests_total', 'sizes', 'sizes_sum', 'up'];
    const unserved = ['latency_seconds', 'requests_total_count', 'sizes_bucket', 'requests', 'latency_bucket'];

    expect(served.filter((name) => !isServed(name, families))).toEqual([]);
    expect(unserved.filter((name) => isServed(name, families))).toEqual([]);
  });
});

describe('alerting rules and the dashboard', () => {
  let database: TestDatabase;
  let server: TestServer;
  let families: Map<string, string>;

  beforeAll(async () => {
    database = await openTestDatabase();
    server = await startServer(database, {
      rateLimits: new FlexibleRateLimits({ perKeyPerMinute: 1, failedAuthenticationsPerMinute: 100 }, null),
    });
    families = familiesOf(await (await fetch(`${server.url}/metrics`)).text());
  });

  afterAll(async () => {
    await server?.close();
    await database?.close();
  });

  it('name only metrics that /metrics serves', () => {
    const expressions = [...ruleExpressions(), ...dashboardExpressions()];
    const named = expressions.flatMap(({ where, expr }) => metricNames(expr).map((name) => ({ where, name })));

    expect(named.filter(({ name }) => !isServed(name, families))).toEqual([]);
    // The files were read: every alert and every panel the issue asks for names its metric.
    expect(new Set(named.map(({ name }) => name))).toEqual(
      new Set([
        'up',
        'ALERTS',
        'http_requests_total',
        'http_request_duration_seconds_bucket',
        'db_up',
        'db_replica_lag_seconds',
        'db_replica_max_lag_seconds',
        'db_replica_usable',
        'http_requests_rate_limited_total',
        'db_pool_connections',
        'db_pool_waiting_requests',
        'process_resident_memory_bytes',
        'nodejs_heap_size_used_bytes',
        'nodejs_heap_size_total_bytes',
        'nodejs_eventloop_lag_p99_seconds',
        'process_cpu_seconds_total',
        'pets_list_mark_unavailable_total',
        'pets_list_mark_wait_seconds_bucket',
        'pets_high_water_mark_age_seconds',
      ]),
    );
  });

  it('serves the new series: pool in use and waiting, database up, 429s by policy', async () => {
    await fetch(`${server.url}/v1/pets`, { headers: authorized });
    const refused = await fetch(`${server.url}/v1/pets`, { headers: authorized });

    const text = await (await fetch(`${server.url}/metrics`)).text();

    expect(refused.status).toBe(429);
    expect(text).toMatch(/^db_pool_connections\{state="in_use"\} \d+$/m);
    expect(text).toMatch(/^db_pool_waiting_requests 0$/m);
    expect(text).toMatch(/^db_up 1$/m);
    // The guard names the refusing policy first in RateLimit; the metric is labelled by it.
    expect(refused.headers.get('ratelimit')).toMatch(/^"per-key";/);
    expect(text).toMatch(/^http_requests_rate_limited_total\{policy="per-key"\} 1$/m);
    expect(text).toMatch(/^http_requests_rate_limited_total\{policy="unknown"\} 0$/m);
    // No replicas here: the replica families are declared, without a series.
    expect(families.get('db_replica_lag_seconds')).toBe('gauge');
    expect(text).not.toMatch(/^db_replica_/m);
  });
});
