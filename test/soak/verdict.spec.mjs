import { errorBodyFault } from '../../scripts/soak/clients.mjs';
import { faultSchedule } from '../../scripts/soak/schedule.mjs';
import { judge, RECOVERY_BOUND_MS, resourceWindows } from '../../scripts/soak/verdict.mjs';

// The soak's checks, on hand-made records: each must fail on the loss it is there to catch.

const pet = (id, status = 'available') => ({ id, name: `run plain ${id}`, categoryId: 1, status });
const create = (id, overrides = {}) => ({
  name: `run plain ${id}`,
  keyed: false,
  attempts: 1,
  acknowledged: pet(id),
  ...overrides,
});
const answer = (sentAt, status, overrides = {}) => ({
  label: 'list',
  sentAt,
  ms: 5,
  status,
  fault: null,
  ...overrides,
});
const sample = (at, overrides = {}) => ({
  at,
  instance: 1,
  pid: 1,
  rssKb: 100_000,
  fds: 40,
  dbConnections: 4,
  pool: { total: 4, idle: 4, waiting: 0 },
  ...overrides,
});
const steadySamples = () => Array.from({ length: 61 }, (_, i) => sample(i * 10_000));

function aRun(overrides = {}) {
  return {
    records: [answer(1000, 200)],
    creates: [create(1), create(2)],
    pagers: [{ status: null, seen: new Set([1, 2]), late: 0, caughtUp: true }],
    stored: [pet(1), pet(2)],
    faults: [],
    samples: steadySamples(),
    hostile: [],
    spared: 1,
    warmupMs: 0,
    endMs: 600_000,
    ...overrides,
  };
}

describe('the soak verdict', () => {
  it('passes a run where everything held', () => {
    expect(judge(aRun()).failures).toEqual([]);
  });

  it('fails on an acknowledged create missing from the database', () => {
    const { failures } = judge(aRun({ stored: [pet(1)] }));

    expect(failures).toEqual([expect.stringContaining('acknowledged create lost')]);
  });

  it('fails on an acknowledged create stored with other content', () => {
    const { failures } = judge(aRun({ stored: [pet(1), pet(2, 'sold')] }));

    expect(failures).toEqual([expect.stringContaining('acknowledged create lost')]);
  });

  it('fails on an Idempotency-Key create stored twice', () => {
    const keyed = create(2, { keyed: true, attempts: 2 });

    const { failures } = judge(
      aRun({ creates: [create(1), keyed], stored: [pet(1), pet(2), { ...pet(3), name: keyed.name }] }),
    );

    expect(failures).toEqual([expect.stringContaining('stored twice')]);
  });

  it('fails on an acknowledged pet a pager never saw', () => {
    const { failures } = judge(aRun({ pagers: [{ status: null, seen: new Set([2]), late: 0, caughtUp: true }] }));

    expect(failures).toEqual([expect.stringContaining('never saw 1 acknowledged pets')]);
  });

  it('does not expect a filtered pager to see pets of another status', () => {
    const pagers = [{ status: 'sold', seen: new Set(), late: 0, caughtUp: true }];

    expect(judge(aRun({ pagers })).failures).toEqual([]);
  });

  it('reports the latency of answers outside every fault window, leaving out one that overlaps a window', () => {
    const faults = [{ kind: 'primary', begin: 100_000, healed: 110_000, detail: '' }];
    const records = [
      answer(1000, 200, { ms: 4 }),
      answer(2000, 200, { ms: 8 }),
      // Sent before the fault, answered inside it: not outside.
      answer(99_000, 200, { ms: 3000 }),
      answer(115_000, 503, { ms: 2000 }),
    ];

    expect(judge(aRun({ faults, records })).lines).toContainEqual(
      'latency outside fault windows: 2 answers, p50 8.0 ms, p99 8.0 ms, max 8 ms',
    );
  });

  it('allows a 503 from a fault until the bound after its heal, and not later', () => {
    const faults = [{ kind: 'redis', begin: 100_000, healed: 110_000, detail: '' }];
    const justInside = answer(110_000 + RECOVERY_BOUND_MS - 10, 503);
    const after = answer(110_000 + RECOVERY_BOUND_MS + 10, 503);

    expect(judge(aRun({ faults, records: [justInside] })).failures).toEqual([]);
    expect(judge(aRun({ faults, records: [after] })).failures).toEqual([
      expect.stringContaining('outside every fault window'),
    ]);
  });

  it('fails on any 5xx other than 503, even during a fault', () => {
    const faults = [{ kind: 'kill', begin: 100_000, healed: 110_000, detail: '' }];

    const { failures } = judge(aRun({ faults, records: [answer(105_000, 502)] }));

    expect(failures).toEqual([expect.stringContaining('5xx other than 503')]);
  });

  it('fails on an answer the contract does not allow, and on a 429 to a valid key', () => {
    const records = [answer(1000, 418, { fault: 'status not declared' }), answer(2000, 429)];

    const { failures } = judge(aRun({ records }));

    expect(failures).toEqual([expect.stringContaining('418 status not declared'), expect.stringContaining('429')]);
  });

  it("fails when the spared instance's memory grows more than 10% from the first window to the last", () => {
    const samples = steadySamples().map((s) => (s.at >= 480_000 ? { ...s, rssKb: 111_000 } : s));

    const { failures } = judge(aRun({ samples }));

    expect(failures).toEqual([expect.stringContaining('RSS MiB')]);
  });

  it('shows but does not judge the drift of a run under 10 minutes', () => {
    const samples = steadySamples()
      .filter((s) => s.at <= 300_000)
      .map((s) => (s.at >= 240_000 ? { ...s, rssKb: 111_000 } : s));

    const { lines, failures } = judge(aRun({ samples, endMs: 300_000 }));

    expect(failures).toEqual([]);
    expect(lines).toContainEqual(expect.stringContaining('RSS MiB 97.7 → 108.4 (11.0%)'));
  });

  it('does not judge the pool of an instance that the next fault kills within the bound', () => {
    const faults = [
      { kind: 'primary', begin: 100_000, healed: 110_000, detail: '' },
      { kind: 'kill', instance: 1, begin: 110_100, healed: 120_000, detail: '' },
    ];
    const busy = { total: 10, idle: 0, waiting: 3 };
    const samples = steadySamples().map((s) => (s.at > 110_000 && s.at <= 140_000 ? { ...s, pool: busy } : s));

    expect(judge(aRun({ faults, samples })).failures).toEqual([]);
    expect(judge(aRun({ faults: [faults[0]], samples })).failures).toEqual([
      expect.stringContaining('the pool of instance 1 not lending freely'),
    ]);
  });

  it('fails when a pool still lends nothing freely long after a fault', () => {
    const faults = [{ kind: 'silent-db', begin: 100_000, healed: 100_000, detail: '' }];
    const samples = steadySamples().map((s) =>
      s.at > 100_000 ? { ...s, pool: { total: 10, idle: 0, waiting: 3 } } : s,
    );

    const { failures } = judge(aRun({ faults, samples }));

    expect(failures).toEqual([expect.stringContaining('pool of instance 1')]);
  });

  it('fails on a fault that could not be healed', () => {
    const faults = [
      { kind: 'kill', begin: 100_000, healed: 280_000, detail: 'NOT HEALED: no /readyz', unhealed: true },
    ];

    expect(judge(aRun({ faults })).failures).toEqual([expect.stringContaining('NOT HEALED')]);
  });

  it('compares five minutes after warm-up with the last five, or fifths of a short run', () => {
    expect(resourceWindows(60_000, 1_860_000)).toEqual({ first: [60_000, 360_000], last: [1_560_000, 1_860_000] });
    expect(resourceWindows(30_000, 180_000)).toEqual({ first: [30_000, 60_000], last: [150_000, 180_000] });
  });
});

describe('the Error body check', () => {
  it('accepts the contract body and names what is wrong with others', () => {
    const body = JSON.stringify({ code: 'unavailable', message: 'retry later', status: 503 });

    expect(errorBodyFault(503, 'application/json; charset=utf-8', body)).toBeNull();
    expect(errorBodyFault(502, 'text/html', '<html>')).toBe('content-type text/html');
    expect(errorBodyFault(500, 'application/json', body)).toBe('status field 503');
    expect(errorBodyFault(503, 'application/json', JSON.stringify({ code: 'oops', message: 'm', status: 503 }))).toBe(
      'code oops',
    );
  });
});

describe('the fault schedule', () => {
  it('is the same for the same seed, one fault every 20-60 s, and never restarts the spared instance', () => {
    const first = faultSchedule({ seed: 42, instances: 3, lastStartMs: 1_800_000 });
    const again = faultSchedule({ seed: 42, instances: 3, lastStartMs: 1_800_000 });

    expect(again).toEqual(first);
    const gaps = first.faults.map((f, i) => f.at - (i === 0 ? 0 : first.faults[i - 1].at));
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(20_000);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(60_000);
    const restarted = first.faults.filter((f) => f.kind === 'kill' || f.kind === 'term').map((f) => f.instance);
    expect(restarted.length).toBeGreaterThan(0);
    expect(restarted).not.toContain(first.spared);
    expect(new Set(first.faults.map((f) => f.kind)).size).toBe(7);
  });
});
