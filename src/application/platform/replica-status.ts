export type ReplicaState = {
  /** host:port, never a user or password. */
  name: string;
  /** Whether the replica serves reads now. */
  usable: boolean;
  /** As last measured; Infinity when it was never measured or lags further than the bound can tell. */
  lagMs: number;
};

/** The streaming replicas that may serve reads, as the last check saw them (for metrics). */
export abstract class ReplicaStatus {
  /** One entry per configured replica; empty when there are none. */
  abstract replicas(): ReplicaState[];
  /** A replica further behind than this serves no reads. */
  abstract maxLagMs(): number;
}
