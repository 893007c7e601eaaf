// Each instance's resident memory, open file descriptors and database connections, from /proc, and
// its pool as its own /metrics reports it.
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';

function instancePid(i) {
  try {
    return Number(readFileSync(`.cluster/instance-${i}.pid`, 'utf8'));
  } catch {
    return null;
  }
}

/** Established TCP connections by socket inode → remote port. */
function establishedByInode() {
  const byInode = new Map();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10 || fields[3] !== '01') continue;
      byInode.set(fields[9], Number.parseInt(fields[2].split(':')[1], 16));
    }
  }
  return byInode;
}

/** A descriptor closed between listing and reading reads as nothing. */
function linkOf(file) {
  try {
    return readlinkSync(file);
  } catch {
    return '';
  }
}

function poolOf(metrics) {
  const pool = {};
  for (const match of metrics.matchAll(/^db_pool_connections\{state="(\w+)"\} (\d+)/gm))
    pool[match[1]] = Number(match[2]);
  return pool;
}

/** One sample of every instance; `databasePorts(i)` are the ports instance i's database connections go to. */
export async function sampleInstances({ instancePorts, databasePorts, at }) {
  const byInode = establishedByInode();
  return Promise.all(
    instancePorts.map(async (port, index) => {
      const i = index + 1;
      const pid = instancePid(i);
      const sample = { at, instance: i, pid, rssKb: null, fds: null, dbConnections: null, pool: null };
      if (pid === null) return sample;
      try {
        // A process that is exiting (or a zombie) has no VmRSS line.
        const rss = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
        sample.rssKb = rss === undefined ? null : Number(rss);
        const fds = readdirSync(`/proc/${pid}/fd`);
        sample.fds = fds.length;
        const ports = databasePorts(i);
        sample.dbConnections = 0;
        for (const fd of fds) {
          const inode = /^socket:\[(\d+)\]$/.exec(linkOf(`/proc/${pid}/fd/${fd}`))?.[1];
          if (inode !== undefined && ports.includes(byInode.get(inode))) sample.dbConnections++;
        }
      } catch {
        // The process ended between reading its pid and its files: a restart in progress.
        return { ...sample, rssKb: null, fds: null, dbConnections: null };
      }
      try {
        const response = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(2000) });
        sample.pool = poolOf(await response.text());
      } catch {
        sample.pool = null;
      }
      return sample;
    }),
  );
}
