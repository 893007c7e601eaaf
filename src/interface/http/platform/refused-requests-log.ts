import { Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';

/** How often the counts are written. */
export const REFUSED_REQUESTS_INTERVAL_MS = 10_000;
/** Addresses counted apart in one interval; refusals from any further address count under `other`. */
export const MAX_COUNTED_ADDRESSES = 10_000;

export type RefusedRequests = { address: string; statuses: Record<string, number> };

/**
 * The request log's account of the requests authentication refuses. Not a line each: under a
 * flood of wrong keys, writing them would cost more than refusing them. Counted per client address
 * and status instead, and written as one line per address every REFUSED_REQUESTS_INTERVAL_MS (and
 * at shutdown): `{"context":"RefusedRequests","address":"203.0.113.9","statuses":{"401":3,"429":5120},"msg":"requests refused"}`.
 */
@Injectable()
export class RefusedRequestsLog implements OnApplicationShutdown {
  private readonly logger = new Logger('RefusedRequests');
  private counts = new Map<string, Record<string, number>>();

  count(address: string, status: number): void {
    const key = this.counts.has(address) || this.counts.size < MAX_COUNTED_ADDRESSES ? address : 'other';
    let statuses = this.counts.get(key);
    if (statuses === undefined) {
      statuses = {};
      this.counts.set(key, statuses);
    }
    statuses[status] = (statuses[status] ?? 0) + 1;
  }

  /** What was counted since the last call; counting starts afresh. */
  take(): RefusedRequests[] {
    const counted = this.counts;
    this.counts = new Map();
    return [...counted].map(([address, statuses]) => ({ address, statuses }));
  }

  @Interval('refused-requests-log', REFUSED_REQUESTS_INTERVAL_MS)
  flush(): void {
    for (const line of this.take()) this.logger.log({ ...line, msg: 'requests refused' });
  }

  onApplicationShutdown(): void {
    this.flush();
  }
}
