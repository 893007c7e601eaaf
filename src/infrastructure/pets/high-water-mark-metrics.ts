import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { HighWaterMarkEvents } from '../../application/pets/ports.js';

/** The high-water marks' events as Prometheus metrics, in the service's registry (served at /metrics). */
export class HighWaterMarkMetrics extends HighWaterMarkEvents {
  private readonly waits: Histogram;
  private readonly unavailable: Counter;
  /** When this instance last read a high-water mark (performance.now()), or null before its first. */
  private readAt: number | null = null;

  constructor(registry: Registry) {
    super();
    this.waits = new Histogram({
      name: 'pets_list_mark_wait_seconds',
      help: 'Time a list page waited for a fresh high-water mark: for the creates in flight when it asked, mostly.',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    });
    this.unavailable = new Counter({
      name: 'pets_list_mark_unavailable_total',
      help: 'List pages answered 503 for want of a fresh high-water mark (the primary did not answer, creates outlasted their limits, or a guard of the ids is off).',
      registers: [registry],
    });
    const readAt = (): number | null => this.readAt;
    new Gauge({
      name: 'pets_high_water_mark_age_seconds',
      help: 'Seconds since this instance last read a high-water mark (+Inf before its first): pages that end below it read none.',
      registers: [registry],
      collect() {
        const at = readAt();
        this.set(at === null ? Infinity : (performance.now() - at) / 1000);
      },
    });
  }

  read(): void {
    this.readAt = performance.now();
  }

  waited(seconds: number): void {
    this.waits.observe(seconds);
  }

  refused(): void {
    this.unavailable.inc();
  }
}
