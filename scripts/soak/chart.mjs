// The run as one SVG, drawn by hand: per bucket, requests per second, p50/p99, errors by status and
// each instance's RSS, with every fault marked on the time axis.
import { percentile } from './verdict.mjs';

const WIDTH = 1100;
const LEFT = 70;
const RIGHT = 20;
const PANEL = 150;
const GAP = 40;
const TOP = 60;
const COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#e377c2', '#17becf'];
const FAULT_COLOURS = {
  kill: '#d62728',
  term: '#ff7f0e',
  redis: '#9467bd',
  'silent-db': '#8c564b',
  replica: '#17becf',
  hostile: '#7f7f7f',
};

const escape = (text) =>
  String(text).replace(/[<>&"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[c]);

function niceMax(value) {
  if (value <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  return [1, 2, 5, 10].map((m) => m * power).find((m) => m >= value);
}

/** Per bucket: requests per second, p50, p99, counts by non-2xx status, mean RSS per instance. */
export function buckets({ records, samples, endMs, bucketMs }) {
  const count = Math.max(1, Math.ceil(endMs / bucketMs));
  const rows = Array.from({ length: count }, (_, i) => ({ from: i * bucketMs, ms: [], errors: {}, rss: {} }));
  for (const r of records) {
    const row = rows[Math.min(count - 1, Math.floor(r.sentAt / bucketMs))];
    if (r.status !== 0) row.ms.push(r.ms);
    if (r.status === 0 || r.status >= 400) {
      const what = r.status === 0 ? 'no answer' : String(r.status);
      row.errors[what] = (row.errors[what] ?? 0) + 1;
    }
    row.requests = (row.requests ?? 0) + 1;
  }
  const rssSums = rows.map(() => new Map());
  for (const s of samples) {
    if (s.rssKb === null) continue;
    const sums = rssSums[Math.min(count - 1, Math.floor(s.at / bucketMs))];
    const [sum, n] = sums.get(s.instance) ?? [0, 0];
    sums.set(s.instance, [sum + s.rssKb, n + 1]);
  }
  return rows.map((row, i) => {
    const sorted = row.ms.sort((a, b) => a - b);
    const span = Math.min(bucketMs, endMs - row.from) / 1000;
    const rss = {};
    for (const [instance, [sum, n]] of rssSums[i]) rss[instance] = sum / n / 1024;
    return {
      from: row.from,
      rps: (row.requests ?? 0) / Math.max(span, 1),
      p50: percentile(sorted, 50),
      p99: percentile(sorted, 99),
      errors: row.errors,
      rss,
    };
  });
}

export function chart({ rows, faults, endMs, bucketMs, title }) {
  const plotWidth = WIDTH - LEFT - RIGHT;
  const x = (ms) => LEFT + (ms / endMs) * plotWidth;
  const out = [];
  const panels = [];
  const panel = (index, label, series, unit) => {
    const top = TOP + index * (PANEL + GAP);
    const max = niceMax(Math.max(0, ...series.flatMap((s) => s.points.map(([, v]) => (Number.isFinite(v) ? v : 0)))));
    const y = (v) => top + PANEL - (v / max) * PANEL;
    out.push(`<rect x="${LEFT}" y="${top}" width="${plotWidth}" height="${PANEL}" fill="#fafafa" stroke="#ccc"/>`);
    out.push(`<text x="${LEFT}" y="${top - 8}" font-weight="bold">${escape(label)}</text>`);
    for (const v of [0, max / 2, max])
      out.push(
        `<text x="${LEFT - 6}" y="${y(v) + 4}" text-anchor="end">${v >= 100 || v === 0 ? Math.round(v) : v.toFixed(v < 1 ? 2 : 1)}${unit}</text>`,
      );
    let legend = LEFT + plotWidth;
    for (const [i, s] of [...series.entries()].reverse()) {
      const colour = s.colour ?? COLOURS[i % COLOURS.length];
      const points = s.points.filter(([, v]) => Number.isFinite(v));
      if (points.length > 0)
        out.push(
          `<polyline fill="none" stroke="${colour}" stroke-width="1.5" points="${points.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(' ')}"/>`,
        );
      legend -= 8 + 7 * s.name.length;
      out.push(`<text x="${legend}" y="${top - 8}" fill="${colour}">${escape(s.name)}</text>`);
      legend -= 12;
    }
    panels.push([top, top + PANEL]);
  };
  const mid = (row) => Math.min(endMs, row.from + bucketMs / 2);
  panel(0, 'requests per second', [{ name: 'req/s', points: rows.map((r) => [mid(r), r.rps]) }], '');
  panel(
    1,
    'latency (ms)',
    [
      { name: 'p50', points: rows.map((r) => [mid(r), r.p50]) },
      { name: 'p99', points: rows.map((r) => [mid(r), r.p99]) },
    ],
    '',
  );
  const statuses = [...new Set(rows.flatMap((r) => Object.keys(r.errors)))].sort();
  panel(
    2,
    'non-2xx answers and no answers, by status (per bucket)',
    statuses.map((status) => ({ name: status, points: rows.map((r) => [mid(r), r.errors[status] ?? 0]) })),
    '',
  );
  const instances = [...new Set(rows.flatMap((r) => Object.keys(r.rss)))].sort();
  panel(
    3,
    'RSS per instance (MiB)',
    instances.map((i) => ({ name: `instance ${i}`, points: rows.map((r) => [mid(r), r.rss[i] ?? null]) })),
    '',
  );
  const bottom = panels.at(-1)[1];
  for (let t = 0; t <= endMs; t += endMs > 600_000 ? 300_000 : 60_000) {
    out.push(`<line x1="${x(t)}" y1="${bottom}" x2="${x(t)}" y2="${bottom + 5}" stroke="#333"/>`);
    out.push(`<text x="${x(t)}" y="${bottom + 18}" text-anchor="middle">${Math.round(t / 60_000)} min</text>`);
  }
  for (const [n, f] of faults.entries()) {
    const colour = FAULT_COLOURS[f.kind];
    out.push(
      `<rect x="${x(f.begin).toFixed(1)}" y="${TOP}" width="${Math.max(1.5, x(f.healed) - x(f.begin)).toFixed(1)}" height="${bottom - TOP}" fill="${colour}" opacity="0.25"><title>${escape(`${(f.begin / 1000).toFixed(0)} s: ${f.description}`)}</title></rect>`,
    );
    out.push(
      `<text x="${x(f.begin).toFixed(1)}" y="${TOP - 30 + (n % 2) * 10}" fill="${colour}" font-size="9">${escape(f.kind)}</text>`,
    );
  }
  const height = bottom + 60;
  let legend = LEFT;
  const keys = Object.entries(FAULT_COLOURS).map(([kind, colour]) => {
    const item = `<rect x="${legend}" y="${height - 26}" width="10" height="10" fill="${colour}" opacity="0.5"/><text x="${legend + 14}" y="${height - 17}">${kind}</text>`;
    legend += 30 + 7 * kind.length;
    return item;
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${LEFT}" y="18" font-size="14" font-weight="bold">${escape(title)}</text>`,
    ...out,
    ...keys,
    `<text x="${legend + 10}" y="${height - 17}">shaded: from injection to heal</text>`,
    '</svg>',
  ].join('\n');
}
