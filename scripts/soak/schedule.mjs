// The fault schedule, drawn from the seed alone so that SOAK_SEED replays the same run.

/** mulberry32: a small seeded generator; the same seed gives the same numbers on every machine. */
export function seededRandom(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const FAULT_KINDS = ['kill', 'term', 'redis', 'silent-db', 'replica', 'primary', 'hostile'];

/**
 * Faults from `firstGapMs` on, one every 20-60 s, until `lastStartMs`. Kinds come in shuffled
 * rounds of all seven, so a short run still meets most of them. One instance (`spared`) is never
 * killed or stopped: its memory, descriptors and connections are compared over the whole run.
 * `primary` is the PostgreSQL leader's host lost: Patroni fails over to the synchronous standby.
 */
export function faultSchedule({ seed, instances, lastStartMs, gapMs = { min: 20_000, max: 60_000 } }) {
  const random = seededRandom(seed);
  const between = (min, max) => Math.round(min + random() * (max - min));
  const pick = (values) => values[Math.floor(random() * values.length)];
  const spared = 1 + Math.floor(random() * instances);
  const restartable = Array.from({ length: instances }, (_, i) => i + 1).filter((i) => i !== spared);
  const everyInstance = Array.from({ length: instances }, (_, i) => i + 1);
  const faults = [];
  let round = [];
  for (let at = between(gapMs.min, gapMs.max); at <= lastStartMs; at += between(gapMs.min, gapMs.max)) {
    if (round.length === 0) {
      round = [...FAULT_KINDS];
      for (let i = round.length - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1));
        [round[i], round[j]] = [round[j], round[i]];
      }
    }
    const kind = round.shift();
    if (kind === 'kill') faults.push({ at, kind, instance: pick(restartable), downMs: between(3000, 8000) });
    else if (kind === 'term') faults.push({ at, kind, instance: pick(restartable), downMs: between(1000, 4000) });
    else if (kind === 'redis') faults.push({ at, kind, pauseMs: between(5000, 15_000) });
    else if (kind === 'silent-db') faults.push({ at, kind, instance: pick(everyInstance) });
    else if (kind === 'replica') faults.push({ at, kind, downMs: between(5000, 20_000) });
    else if (kind === 'primary') faults.push({ at, kind, downMs: between(5000, 20_000) });
    else faults.push({ at, kind, source: `127.0.0.${between(2, 250)}`, burstMs: between(5000, 10_000) });
  }
  return { spared, faults };
}

export function describeFault(fault) {
  switch (fault.kind) {
    case 'kill':
      return `kill -9 of instance ${fault.instance}, restarted after ${fault.downMs} ms`;
    case 'term':
      return `SIGTERM of instance ${fault.instance}, restarted ${fault.downMs} ms after it exited`;
    case 'redis':
      return `Redis paused (SIGSTOP) for ${fault.pauseMs} ms`;
    case 'silent-db':
      return `the open database connections of instance ${fault.instance} made silent`;
    case 'replica':
      return `replica stopped for ${fault.downMs} ms`;
    case 'primary':
      return `the PostgreSQL leader's host lost (kill -9 of its Patroni and postgres); back ${fault.downMs} ms after a new leader is elected`;
    default:
      return `hostile burst from ${fault.source} for ${fault.burstMs} ms`;
  }
}
