import { Registry } from 'prom-client';
import { HighWaterMarkMetrics } from '../../../../src/infrastructure/pets/high-water-mark-metrics.js';

/** The exposition lines of one metric, as Prometheus scrapes them. */
async function samples(registry: Registry, name: string): Promise<string[]> {
  const text = await registry.getSingleMetricAsString(name);
  return text.split('\n').filter((line) => line.startsWith(name));
}

describe('HighWaterMarkMetrics', () => {
  it('has an infinite mark age before the first mark, and a small one just after', async () => {
    const registry = new Registry();
    const marks = new HighWaterMarkMetrics(registry);
    expect(await samples(registry, 'pets_high_water_mark_age_seconds')).toEqual([
      'pets_high_water_mark_age_seconds +Inf',
    ]);

    marks.read();

    const [age] = await samples(registry, 'pets_high_water_mark_age_seconds');
    expect(Number(age?.split(' ')[1])).toBeLessThan(1);
  });

  it('times the lists that waited for a mark, and counts those refused one', async () => {
    const registry = new Registry();
    const marks = new HighWaterMarkMetrics(registry);

    marks.waited(0.003);
    marks.waited(2);
    marks.refused();

    expect(await samples(registry, 'pets_list_mark_wait_seconds')).toEqual(
      expect.arrayContaining([
        'pets_list_mark_wait_seconds_bucket{le="0.005"} 1',
        'pets_list_mark_wait_seconds_bucket{le="2.5"} 2',
        'pets_list_mark_wait_seconds_count 2',
      ]),
    );
    expect(await samples(registry, 'pets_list_mark_unavailable_total')).toEqual(['pets_list_mark_unavailable_total 1']);
  });
});
