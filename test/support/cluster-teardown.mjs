// The cluster project's globalTeardown: the cluster that the files shared (sharedCluster() in
// cluster.ts) goes down once every file has run, passed or not.
import { execFileSync } from 'node:child_process';

export default function teardown() {
  execFileSync('bash', ['scripts/cluster/cluster.sh', 'down'], { stdio: 'inherit', timeout: 120_000 });
}
