import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { clusterProcesses, sharedCluster, until } from '../support/cluster.js';

// `cluster:down` after a host lost without cluster.sh knowing: a node's Patroni and postmaster
// killed from outside, their pid file left. The cluster goes down here; a file after this one
// brings up another.

sharedCluster(5 * 60_000);

it(
  'down after a lost host it was not told about: stops the rest, says what, leaves nothing running',
  async () => {
    const run = promisify(execFile);
    const node = (await run('bash', ['scripts/cluster/cluster.sh', 'leader'])).stdout.trim();
    const pgDir = readFileSync('.cluster/pgdir', 'utf8').trim();
    const patroni = Number(readFileSync(`.cluster/patroni-${node.slice('node'.length)}.pid`, 'utf8'));
    const postmaster = Number(readFileSync(`${pgDir}/${node}/postmaster.pid`, 'utf8').split('\n')[0]);
    const before = clusterProcesses(pgDir);
    process.kill(patroni, 'SIGKILL');
    process.kill(postmaster, 'SIGKILL');
    await until(
      () => Promise.resolve(![patroni, postmaster].some((pid) => clusterProcesses(pgDir).has(pid))),
      10_000,
      'both gone',
    );

    const started = performance.now();
    const { stderr } = await run('bash', ['scripts/cluster/cluster.sh', 'down'], { timeout: 120_000 });
    process.stdout.write(
      `down: after kill -9 of ${node}'s Patroni and postmaster (${before.size} processes of the cluster), in ${Math.round(performance.now() - started)} ms:\n${stderr}`,
    );

    expect(stderr).toContain(`patroni-${node.slice('node'.length)}.pid: pid ${patroni} was gone already`);
    expect(stderr).toContain('down: nothing left running');
    expect([...clusterProcesses(pgDir)]).toEqual([]);
    expect([existsSync('.cluster'), existsSync(pgDir)]).toEqual([false, false]);
  },
  6 * 60_000,
);
