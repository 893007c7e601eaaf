// The figures of a run and what must hold, from the clients' records, the samples and the database.

/** A 503 or a request without an answer is allowed from a fault's start until this long after it was healed. */
export const RECOVERY_BOUND_MS = 10_000;
/** After each fault is healed, every instance's pool must lend freely again within this. */
export const POOL_BOUND_MS = 30_000;
const POOL_MAX = 10;
const DRIFT = 0.1;
/** A shorter run cannot tell a leak from warm-up and load swings: its drift is shown, not judged. */
export const DRIFT_CHECKED_FROM_MS = 600_000;

export function percentile(sorted, p) {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

const mean = (values) => (values.length === 0 ? null : values.reduce((a, b) => a + b, 0) / values.length);
const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;

/**
 * The first and last resource windows: five minutes after warm-up and the last five minutes, or
 * the first and last fifth of what follows warm-up when that is under 25 minutes.
 */
export function resourceWindows(warmupMs, endMs) {
  const length = Math.min(300_000, (endMs - warmupMs) / 5);
  return { first: [warmupMs, warmupMs + length], last: [endMs - length, endMs] };
}

export function judge({ records, creates, pagers, stored, faults, samples, hostile, spared, warmupMs, endMs }) {
  const lines = [];
  const failures = [];
  const say = (line) => lines.push(line);
  const fail = (line) => failures.push(line);

  // Load.
  const answered = records.filter((r) => r.status !== 0);
  const latencies = answered.map((r) => r.ms).sort((a, b) => a - b);
  const byStatus = new Map();
  for (const r of records) {
    const what = r.status === 0 ? r.error : String(r.status);
    byStatus.set(what, (byStatus.get(what) ?? 0) + 1);
  }
  say(
    `requests: ${records.length} in ${seconds(endMs)} (${(records.length / (endMs / 1000)).toFixed(0)}/s); ` +
      `p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms, max ${(latencies.at(-1) ?? 0).toFixed(0)} ms`,
  );
  say(
    `answers: ${[...byStatus]
      .sort()
      .map(([what, n]) => `${what}×${n}`)
      .join(' ')}`,
  );

  // Contract.
  const undeclared = records.filter((r) => r.fault !== null);
  say(`answers the contract does not allow (status, Error body): ${undeclared.length}`);
  for (const r of undeclared.slice(0, 10)) fail(`${r.label} at ${seconds(r.sentAt)}: ${r.status} ${r.fault}`);
  const limited = records.filter((r) => r.status === 429);
  say(`429 to the clients' valid keys: ${limited.length}`);
  if (limited.length > 0) fail(`${limited.length} answers 429 to a valid key from 127.0.0.1`);

  // 5xx and no answers, against the fault windows.
  const windows = faults.map((f) => [f.begin, f.healed + RECOVERY_BOUND_MS]);
  const inWindow = (at) => windows.some(([from, to]) => at >= from && at <= to);
  const other5xx = records.filter((r) => r.status >= 500 && r.status !== 503);
  if (other5xx.length > 0)
    fail(`${other5xx.length} 5xx other than 503: ${[...new Set(other5xx.map((r) => r.status))].join(', ')}`);
  const unavailable = records.filter((r) => r.status === 503 || r.status === 0);
  const outside = unavailable.filter((r) => !inWindow(r.sentAt + r.ms));
  say(
    `503 or no answer: ${unavailable.length}, outside [fault start, healed + ${seconds(RECOVERY_BOUND_MS)}]: ${outside.length}`,
  );
  for (const r of outside.slice(0, 10))
    fail(
      `${r.label} answered ${r.status === 0 ? r.error : r.status} at ${seconds(r.sentAt + r.ms)}, outside every fault window`,
    );

  // Latency away from the faults: answers whose whole request lies outside every fault window.
  const calm = answered
    .filter((r) => !windows.some(([from, to]) => r.sentAt <= to && r.sentAt + r.ms >= from))
    .map((r) => r.ms)
    .sort((a, b) => a - b);
  say(
    `latency outside fault windows: ${calm.length} answers, p50 ${percentile(calm, 50).toFixed(1)} ms, ` +
      `p99 ${percentile(calm, 99).toFixed(1)} ms, max ${(calm.at(-1) ?? 0).toFixed(0)} ms`,
  );

  // Faults: what each cost, and whether every pool lends freely again afterwards.
  say(`faults: ${faults.length} (503s and no answers per fault, the last one's time after heal; pool back after heal)`);
  for (const f of faults) {
    const mine = unavailable.filter(
      (r) => r.sentAt + r.ms >= f.begin && r.sentAt + r.ms <= f.healed + RECOVERY_BOUND_MS,
    );
    const last = mine.length === 0 ? null : Math.max(...mine.map((r) => r.sentAt + r.ms)) - f.healed;
    const after = samples.filter((s) => s.at > f.healed && s.at <= f.healed + POOL_BOUND_MS);
    const refilled = new Map();
    for (const s of after) {
      if (refilled.has(s.instance) || s.pool === null || s.pool.total === undefined) continue;
      if (s.pool.waiting === 0 && s.pool.total - s.pool.idle <= POOL_MAX / 2) refilled.set(s.instance, s.at - f.healed);
    }
    // An instance that the next fault kills or stops within the bound starts a new pool: not judged.
    const restarted = new Set(
      faults
        .filter((g) => (g.kind === 'kill' || g.kind === 'term') && g.begin >= f.healed)
        .filter((g) => g.begin <= f.healed + POOL_BOUND_MS)
        .map((g) => g.instance),
    );
    const instances = new Set(samples.map((s) => s.instance));
    const notBack = [...instances].filter((i) => !refilled.has(i) && !restarted.has(i));
    say(
      `  ${seconds(f.begin).padStart(8)} ${f.kind.padEnd(9)} healed +${seconds(f.healed - f.begin)}: ${mine.length} 503/no answer` +
        `${last === null ? '' : `, last ${last < 0 ? 'before heal' : `${seconds(last)} after heal`}`}; ` +
        `pool back in ${[...refilled.values()].length === 0 ? '-' : seconds(Math.max(...refilled.values()))}` +
        `${f.detail ? `; ${f.detail}` : ''}`,
    );
    if (f.unhealed) fail(`${f.kind} at ${seconds(f.begin)}: ${f.detail}`);
    if (notBack.length > 0 && f.healed + POOL_BOUND_MS <= endMs)
      fail(
        `after ${f.kind} at ${seconds(f.begin)}: the pool of instance ${notBack.join(', ')} not lending freely within ${seconds(POOL_BOUND_MS)}`,
      );
  }

  // Hostile traffic: the service's answers must keep the contract; raw garbage must end.
  const hostileHttp = hostile.filter((a) => !a.raw);
  const hostileBad = hostileHttp.filter((a) => a.status === 0 || a.status >= 500 || a.fault !== null);
  const rawOpen = hostile.filter((a) => a.raw && !a.closed);
  say(
    `hostile: ${hostileHttp.length} requests (${hostileBad.length} without a contract answer), ${hostile.length - hostileHttp.length} raw (${rawOpen.length} left open)`,
  );
  if (hostileBad.length > 0)
    fail(`${hostileBad.length} hostile requests without a contract answer: ${JSON.stringify(hostileBad.slice(0, 3))}`);
  if (rawOpen.length > 0) fail(`${rawOpen.length} raw garbage connections still open after 15 s`);

  // Creates: nothing acknowledged lost, nothing stored twice.
  const acknowledged = creates.filter((c) => c.acknowledged !== null);
  const keyed = creates.filter((c) => c.keyed);
  const retried = keyed.filter((c) => c.attempts > 1);
  say(
    `creates: ${creates.length}, acknowledged ${acknowledged.length} (with Idempotency-Key ${keyed.filter((c) => c.acknowledged).length}/${keyed.length}, ` +
      `${retried.length} retried, ${retried.reduce((n, c) => n + c.attempts - 1, 0)} retries); unanswered plain creates ${creates.filter((c) => !c.keyed && !c.acknowledged).length}`,
  );
  const byName = new Map();
  for (const row of stored) byName.set(row.name, [...(byName.get(row.name) ?? []), row]);
  const lost = acknowledged.filter((c) => {
    const rows = byName.get(c.name) ?? [];
    const pet = c.acknowledged;
    return !rows.some((row) => row.id === pet.id && row.categoryId === pet.categoryId && row.status === pet.status);
  });
  say(`acknowledged creates lost: ${lost.length}`);
  for (const c of lost.slice(0, 10)) fail(`acknowledged create lost: ${JSON.stringify(c.acknowledged)}`);
  const twice = keyed.filter((c) => (byName.get(c.name) ?? []).length > 1);
  const plainTwice = creates.filter((c) => !c.keyed && (byName.get(c.name) ?? []).length > 1);
  say(
    `Idempotency-Key creates stored twice: ${twice.length} (of them retried: ${twice.filter((c) => c.attempts > 1).length}); plain creates stored twice: ${plainTwice.length}`,
  );
  for (const c of [...twice, ...plainTwice].slice(0, 10)) fail(`stored twice: ${c.name}`);

  // Pagers: every acknowledged pet seen by every pager whose filter it matches.
  for (const pager of pagers) {
    const expected = acknowledged.filter((c) => pager.status === null || c.acknowledged.status === pager.status);
    const unseen = expected.filter((c) => !pager.seen.has(c.acknowledged.id));
    say(
      `pager ${pager.status ?? 'all'}: saw ${pager.seen.size}, ${unseen.length} of ${expected.length} acknowledged pets never seen, ` +
        `${pager.late} appeared behind its position${pager.caughtUp ? '' : ', DID NOT reach the last page at the end'}`,
    );
    if (unseen.length > 0)
      fail(
        `pager ${pager.status ?? 'all'} never saw ${unseen.length} acknowledged pets, e.g. ${unseen[0].acknowledged.id}`,
      );
    if (!pager.caughtUp) fail(`pager ${pager.status ?? 'all'} did not reach the last page after the load`);
  }

  // Resources: the first window after warm-up against the last.
  const { first, last } = resourceWindows(warmupMs, endMs);
  if (endMs < DRIFT_CHECKED_FROM_MS)
    say(`resources (shown, not judged: a run under ${seconds(DRIFT_CHECKED_FROM_MS)}):`);
  say(`resources, mean of [${seconds(first[0])}, ${seconds(first[1])}] → [${seconds(last[0])}, ${seconds(last[1])}]:`);
  for (const instance of [...new Set(samples.map((s) => s.instance))].sort()) {
    const of = ([from, to], field) =>
      mean(
        samples
          .filter((s) => s.instance === instance && s.at >= from && s.at <= to && s[field] !== null)
          .map((s) => s[field]),
      );
    const parts = [];
    for (const [field, label] of [
      ['rssKb', 'RSS MiB'],
      ['fds', 'fds'],
      ['dbConnections', 'DB connections'],
    ]) {
      let a = of(first, field);
      let b = of(last, field);
      if (field === 'rssKb' && a !== null && b !== null) [a, b] = [a / 1024, b / 1024];
      const change = a === null || b === null || a === 0 ? null : (b - a) / a;
      parts.push(
        `${label} ${a?.toFixed(1) ?? '-'} → ${b?.toFixed(1) ?? '-'} (${change === null ? '-' : `${(change * 100).toFixed(1)}%`})`,
      );
      if (instance === spared && endMs >= DRIFT_CHECKED_FROM_MS && (change === null || Math.abs(change) > DRIFT))
        fail(
          `instance ${instance} (never restarted): ${label} ${a?.toFixed(1)} → ${b?.toFixed(1)}, beyond ${DRIFT * 100}%`,
        );
    }
    say(`  instance ${instance}${instance === spared ? ' (never restarted)' : ''}: ${parts.join(', ')}`);
  }
  return { lines, failures };
}
