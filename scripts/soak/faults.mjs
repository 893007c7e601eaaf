// The injections: each one done, healed, and logged with its times.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { errorBodyFault } from './clients.mjs';

const run = promisify(execFile);

export async function cluster(...args) {
  await clusterOutput(...args);
}

/** `scripts/cluster/cluster.sh <args>`, its standard output. */
async function clusterOutput(...args) {
  const { stdout } = await run('bash', ['scripts/cluster/cluster.sh', ...args], {
    timeout: 240_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  return stdout;
}

/** An HTTP request from a chosen loopback source address (fetch cannot bind one; node:http can). */
function requestFrom(localAddress, url, { method = 'GET', headers = {}, body } = {}) {
  return new Promise((resolve) => {
    const sent = request(url, { method, localAddress, headers, agent: false, timeout: 15_000 }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk) => (text += chunk));
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, contentType: response.headers['content-type'], text }),
      );
      response.on('error', () => resolve({ status: 0 }));
    });
    sent.on('timeout', () => sent.destroy());
    sent.on('error', () => resolve({ status: 0 }));
    sent.end(body);
  });
}

/** Raw bytes from a chosen address: the first line of whatever comes back, and whether it closed in time. */
function garbageFrom(localAddress, port, bytes) {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, localAddress });
    let answer = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ firstLine: answer.split('\r\n')[0], closed: false });
    }, 15_000);
    socket.on('data', (chunk) => (answer += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ firstLine: answer.split('\r\n')[0], closed: true });
    });
    socket.end(bytes);
  });
}

/** Wrong keys, oversized and malformed bodies, raw garbage, from `source`, for `burstMs`. */
async function hostileBurst({ source, burstMs }, { balancerUrl, apiKey }, random) {
  const answers = [];
  const port = Number(new URL(balancerUrl).port);
  const url = `${balancerUrl}/v1/pets`;
  const json = { 'Content-Type': 'application/json', Authorization: `Bearer ${apiKey}` };
  const attacks = [
    () => requestFrom(source, url, { headers: { Authorization: `Bearer wrong-${Math.floor(random() * 1e9)}` } }),
    () =>
      requestFrom(source, url, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ name: 'x'.repeat(20_000), categoryId: 1 }),
      }),
    () => requestFrom(source, url, { method: 'POST', headers: json, body: '{"name": "Rex", "categoryId": ' }),
    () => requestFrom(source, url, { method: 'POST', headers: json, body: '[1, 2, 3]' }),
    () =>
      requestFrom(source, url, {
        method: 'POST',
        headers: { ...json, 'Content-Type': 'text/plain' },
        body: 'name=Rex',
      }),
    () => requestFrom(source, `${url}?limit=0&cursor=forged`, { headers: json }),
  ];
  const garbage = [
    Buffer.from('\x00\xff\x13\x37 GARBAGE \r\n\r\n'),
    Buffer.from('GET /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n'),
    Buffer.from(`POST /v1/pets HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n${'A'.repeat(100)}\r\n`),
  ];
  const until = performance.now() + burstMs;
  const loops = Array.from({ length: 4 }, async () => {
    while (performance.now() < until) {
      if (random() < 0.2) {
        const raw = await garbageFrom(source, port, garbage[Math.floor(random() * garbage.length)]);
        answers.push({ raw: true, ...raw });
      } else {
        const answer = await attacks[Math.floor(random() * attacks.length)]();
        const fault = answer.status >= 400 ? errorBodyFault(answer.status, answer.contentType, answer.text) : null;
        answers.push({ raw: false, status: answer.status, fault });
      }
      await sleep(20);
    }
  });
  await Promise.all(loops);
  return answers;
}

/**
 * Starts instance i again. On a busy machine a start can outlast cluster.sh's 120 s wait while the
 * process goes on starting: then wait for its /readyz a while longer before calling it a failure.
 */
async function restart(i, instancePorts) {
  try {
    await cluster('start-instance', String(i));
  } catch (error) {
    const deadline = performance.now() + 120_000;
    while (performance.now() < deadline) {
      const ready = await fetch(`http://127.0.0.1:${instancePorts[i - 1]}/readyz`, {
        signal: AbortSignal.timeout(2000),
      })
        .then((response) => response.ok)
        .catch(() => false);
      if (ready) return;
      await sleep(1000);
    }
    throw error;
  }
}

/**
 * Injects one fault and heals it. Returns the times (ms since the start) it began and was healed,
 * and what it saw.
 */
export async function inject(fault, context) {
  const { now, proxy, random, instancePorts } = context;
  const begin = now();
  let detail = '';
  switch (fault.kind) {
    case 'kill':
      await cluster('kill-instance', String(fault.instance));
      await sleep(fault.downMs);
      await restart(fault.instance, instancePorts);
      break;
    case 'term':
      await cluster('stop-instance', String(fault.instance));
      await sleep(fault.downMs);
      await restart(fault.instance, instancePorts);
      break;
    case 'redis': {
      const pid = Number(readFileSync('.cluster/redis.pid', 'utf8'));
      process.kill(pid, 'SIGSTOP');
      try {
        await sleep(fault.pauseMs);
      } finally {
        process.kill(pid, 'SIGCONT');
      }
      break;
    }
    case 'silent-db':
      detail = `${await proxy.silence(fault.instance)} connections silenced`;
      break;
    case 'replica':
      await cluster('stop-replica');
      await sleep(fault.downMs);
      await cluster('start-replica');
      break;
    case 'primary': {
      const lost = (await clusterOutput('kill-leader')).trim();
      // Restarted before its leader key expires, the old leader would simply take its place again:
      // it comes back only once another node leads, and rejoins as a replica (pg_rewind).
      const elected = performance.now();
      let leader = '';
      while (leader === '' || leader === lost) {
        if (performance.now() - elected > 120_000) throw new Error(`no new leader 120 s after ${lost} was lost`);
        await sleep(500);
        leader = (await clusterOutput('leader').catch(() => '')).trim();
      }
      detail = `${lost} lost, ${leader} elected after ${((performance.now() - elected) / 1000).toFixed(1)} s`;
      await sleep(fault.downMs);
      await cluster('start-node', lost);
      break;
    }
    default: {
      const answers = await hostileBurst(fault, context, random);
      const statuses = new Map();
      for (const answer of answers) {
        const what = answer.raw
          ? `raw:${answer.firstLine.split(' ')[1] ?? (answer.closed ? 'closed' : 'open')}`
          : String(answer.status);
        statuses.set(what, (statuses.get(what) ?? 0) + 1);
      }
      context.hostile.push(...answers);
      detail = `${answers.length} requests: ${[...statuses].map(([what, n]) => `${what}×${n}`).join(' ')}`;
    }
  }
  return { ...fault, begin, healed: now(), detail };
}
