/**
 * SVG charts of the bench's own results: requests per second and p99 per scenario, the servers
 * side by side, one chart per Node line (bench/results/summary-node<major>.json, the latest full
 * run's summary -> docs/bench-node<major>.svg). Hand-made SVG: a chart is a few rectangles and labels.
 *
 *   npm run bench -- --chart     redraws the charts from the saved results, measuring nothing
 */
import { readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';

export type ChartFigures = { requestsPerSecond: number; p99Ms: number; failures: number };

export type ChartInput = {
  node: string;
  date: string;
  seconds: number;
  /** "4 rounds", or "6 to 9 rounds" when each scenario ran until its ratios were trusted. */
  rounds: string;
  /** scenario -> server -> means, in the order the bench ran them. */
  means: Record<string, Record<string, ChartFigures>>;
};

// A server keeps its label and colour in every chart, whichever servers a run had.
const SERVERS: Record<string, { label: string; colour: string }> = {
  ours: { label: 'the service', colour: '#d62728' },
  'obvious-nest': { label: 'obvious NestJS app', colour: '#9467bd' },
  'production-nest': { label: 'obvious NestJS, production', colour: '#8c564b' },
  express: { label: 'Express + pg', colour: '#1f77b4' },
  'node:http': { label: 'node:http + pg', colour: '#2ca02c' },
  nest: { label: 'minimal NestJS', colour: '#7f7f7f' },
};
const WIDTH = 960;
const PANEL_HEIGHT = 250;
const LEFT = 70;
const RIGHT = 20;
const TOP = 110;
const PANEL_GAP = 70;
const LABEL_BAND = 36;

/** Writes docs/bench-node<major>.svg for every bench/results/summary-node<major>.json; returns the files. */
export async function writeCharts(resultsDir: string, docsDir: string): Promise<string[]> {
  const written: string[] = [];
  for (const name of readdirSync(resultsDir)) {
    const line = /^summary-node(\d+)\.json$/.exec(name)?.[1];
    if (line === undefined) continue;
    const input = chartInputOf(JSON.parse(readFileSync(path.join(resultsDir, name), 'utf8')));
    if (input === undefined) throw new Error(`${name}: no means per scenario and server to chart`);
    const file = path.join(docsDir, `bench-node${line}.svg`);
    await writeFile(file, chartSvg(input));
    written.push(file);
  }
  return written;
}

/** The figures a chart needs, taken from a results file, or undefined when it has none. */
export function chartInputOf(report: unknown): ChartInput | undefined {
  if (!isRecord(report) || !isRecord(report.means)) return undefined;
  const means: ChartInput['means'] = {};
  for (const [scenario, byServer] of Object.entries(report.means)) {
    if (!isRecord(byServer)) return undefined;
    means[scenario] = {};
    for (const [server, figures] of Object.entries(byServer)) {
      if (!isRecord(figures)) return undefined;
      const { requestsPerSecond, p99Ms, failures } = figures;
      if (typeof requestsPerSecond !== 'number' || typeof p99Ms !== 'number') return undefined;
      means[scenario][server] = { requestsPerSecond, p99Ms, failures: typeof failures === 'number' ? failures : 0 };
    }
  }
  return {
    node: typeof report.node === 'string' ? report.node : '?',
    date: typeof report.date === 'string' ? report.date : '?',
    seconds: typeof report.seconds === 'number' ? report.seconds : 0,
    rounds: roundsOf(report.rounds),
    means,
  };
}

/** Older results hold one number of rounds; newer ones the rounds each scenario ran. */
function roundsOf(rounds: unknown): string {
  if (typeof rounds === 'number') return `${rounds} round(s)`;
  if (!isRecord(rounds) || !isRecord(rounds.perScenario)) return '? rounds';
  const counts = Object.values(rounds.perScenario).filter((count) => typeof count === 'number');
  const [fewest, most] = [Math.min(...counts), Math.max(...counts)];
  return counts.length === 0 ? '? rounds' : fewest === most ? `${most} round(s)` : `${fewest} to ${most} rounds`;
}

export function chartSvg(input: ChartInput): string {
  const scenarios = Object.keys(input.means);
  const servers = [...new Set(scenarios.flatMap((scenario) => Object.keys(input.means[scenario] ?? {})))];
  const height = TOP + 2 * (PANEL_HEIGHT + LABEL_BAND) + PANEL_GAP + 20;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${height}" fill="#fff"/>`,
    text(LEFT, 24, `npm run bench, Node ${input.node}`, { size: 16, weight: 'bold' }),
    text(
      LEFT,
      44,
      `${input.date.slice(0, 10)}; means of ${input.rounds} of ${input.seconds} s per scenario and server; 32 connections; server on one core`,
    ),
    ...legend(servers),
    ...panel(input, scenarios, servers, {
      top: TOP,
      title: 'requests per second (higher is better)',
      value: (figures) => figures.requestsPerSecond,
      format: (value) => value.toFixed(0),
    }),
    ...panel(input, scenarios, servers, {
      top: TOP + PANEL_HEIGHT + LABEL_BAND + PANEL_GAP,
      title: 'p99 latency, ms (lower is better)',
      value: (figures) => figures.p99Ms,
      format: (value) => value.toFixed(value < 10 ? 1 : 0),
    }),
    '</svg>',
  ];
  return `${parts.join('\n')}\n`;
}

type Panel = {
  top: number;
  title: string;
  value: (figures: ChartFigures) => number;
  format: (value: number) => string;
};

/** One bar group per scenario, one bar per server, on a scale from 0 with round gridlines. */
function panel(input: ChartInput, scenarios: string[], servers: string[], spec: Panel): string[] {
  const values = scenarios.flatMap((scenario) =>
    servers.map((server) => {
      const figures = input.means[scenario]?.[server];
      return figures ? spec.value(figures) : 0;
    }),
  );
  const step = niceStep(Math.max(...values, 1) / 5);
  const max = step * Math.ceil(Math.max(...values, 1) / step);
  const bottom = spec.top + PANEL_HEIGHT;
  const y = (value: number): number => bottom - (value / max) * PANEL_HEIGHT;
  const groupWidth = (WIDTH - LEFT - RIGHT) / scenarios.length;
  const barWidth = (groupWidth * 0.8) / servers.length;
  const parts = [text(LEFT, spec.top - 12, spec.title, { weight: 'bold' })];
  for (let tick = 0; tick <= max; tick += step) {
    parts.push(
      `<line x1="${LEFT}" x2="${WIDTH - RIGHT}" y1="${y(tick).toFixed(1)}" y2="${y(tick).toFixed(1)}" stroke="#ddd"/>`,
      text(LEFT - 6, y(tick) + 4, tick.toFixed(step < 1 ? 1 : 0), { anchor: 'end', colour: '#555' }),
    );
  }
  scenarios.forEach((scenario, group) => {
    const groupLeft = LEFT + group * groupWidth + groupWidth * 0.1;
    servers.forEach((server, index) => {
      const figures = input.means[scenario]?.[server];
      if (!figures) return;
      const value = spec.value(figures);
      const x = groupLeft + index * barWidth;
      parts.push(
        `<rect x="${x.toFixed(1)}" y="${y(value).toFixed(1)}" width="${(barWidth - 2).toFixed(1)}" height="${(bottom - y(value)).toFixed(1)}" fill="${colour(server)}"><title>${escape(`${label(server)}, ${scenario}: ${spec.format(value)}`)}</title></rect>`,
        text(x + barWidth / 2 - 1, y(value) - 3, figures.failures > 0 ? 'FAILED' : spec.format(value), {
          anchor: 'middle',
          size: 9,
        }),
      );
    });
    parts.push(text(LEFT + group * groupWidth + groupWidth / 2, bottom + 16, scenario, { anchor: 'middle' }));
  });
  parts.push(`<line x1="${LEFT}" x2="${WIDTH - RIGHT}" y1="${bottom}" y2="${bottom}" stroke="#333"/>`);
  return parts;
}

function legend(servers: string[]): string[] {
  const itemWidth = (WIDTH - LEFT - RIGHT) / Math.max(servers.length, 1);
  return servers.flatMap((server, index) => {
    const x = LEFT + index * itemWidth;
    return [
      `<rect x="${x.toFixed(1)}" y="56" width="12" height="12" fill="${colour(server)}"/>`,
      text(x + 17, 66, label(server)),
    ];
  });
}

/** 1, 2 or 5 times a power of ten, at least `rough`. */
function niceStep(rough: number): number {
  const power = 10 ** Math.floor(Math.log10(rough));
  return [1, 2, 5, 10].map((factor) => factor * power).find((step) => step >= rough) ?? 10 * power;
}

type TextStyle = { anchor?: 'start' | 'middle' | 'end'; size?: number; weight?: 'bold'; colour?: string };

function text(x: number, y: number, content: string, style: TextStyle = {}): string {
  const attributes = [
    `x="${x.toFixed(1)}"`,
    `y="${y.toFixed(1)}"`,
    style.anchor ? `text-anchor="${style.anchor}"` : '',
    style.size ? `font-size="${style.size}"` : '',
    style.weight ? `font-weight="${style.weight}"` : '',
    style.colour ? `fill="${style.colour}"` : '',
  ].filter((attribute) => attribute !== '');
  return `<text ${attributes.join(' ')}>${escape(content)}</text>`;
}

// Another commit of the service (npm run bench -- --against <commit>) is "ours@<short sha>".
function label(server: string): string {
  return SERVERS[server]?.label ?? server.replace(/^ours@/, 'the service at ');
}

function colour(server: string): string {
  return SERVERS[server]?.colour ?? (server.startsWith('ours@') ? '#ff9896' : '#000');
}

function escape(content: string): string {
  return content.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
