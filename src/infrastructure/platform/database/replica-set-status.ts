import { type ReplicaState, ReplicaStatus } from '../../../application/platform/replica-status.js';
import type { ReplicaSet } from './replica-set.js';

/** What the replica routing last measured, read without a query of its own. */
export class ReplicaSetStatus extends ReplicaStatus {
  constructor(private readonly set: ReplicaSet<unknown>) {
    super();
  }

  replicas(): ReplicaState[] {
    return this.set.status();
  }

  maxLagMs(): number {
    return this.set.options.maxLagMs;
  }
}
