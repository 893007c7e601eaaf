/**
 * What the rounds add up to: ours over every other server, round by round, per scenario, and the
 * flood's effect on ordinary requests. Each ratio is the median of its rounds with its spread
 * (spread.ts), trusted or not; and the helpers that print them.
 */
import type { Measurement } from './scenarios.js';
import { formatSpread, median, type RatioSummary, summariseRatios, TRUSTED_SPREAD } from './spread.js';

export type Run = Measurement & { scenario: string; server: string; round: number };

/** Ours over another server in one scenario. */
export type Comparison = {
  requestsPerSecond: RatioSummary;
  p99: RatioSummary;
  /** The median of the rounds' CPU-per-request ratios: context, not a verdict. */
  cpuPerRequest: number;
  /** The same for PostgreSQL's CPU per request (NaN when PostgreSQL runs on another machine). */
  databaseCpuPerRequest: number;
  /** A run of either server had wrong statuses or socket errors: the ratios mean nothing. */
  failed: boolean;
};

/** Ours over each of `others` in `scenario`, from the rounds both were measured in. */
export function compareScenario(
  runs: Run[],
  scenario: string,
  ours: string,
  others: string[],
): Record<string, Comparison> {
  const ourRuns = byRound(runs, scenario, ours);
  return Object.fromEntries(
    others.map((other) => {
      const pairs = [...byRound(runs, scenario, other)].flatMap(([round, theirs]) => {
        const our = ourRuns.get(round);
        return our ? [{ our, theirs }] : [];
      });
      const ratios = (pick: (run: Run) => number): number[] => pairs.map(({ our, theirs }) => pick(our) / pick(theirs));
      const comparison: Comparison = {
        requestsPerSecond: summariseRatios(ratios((run) => run.requestsPerSecond)),
        p99: summariseRatios(ratios((run) => run.p99Ms)),
        cpuPerRequest: median(ratios((run) => run.cpuUsPerRequest)),
        databaseCpuPerRequest: median(ratios((run) => run.databaseCpuUsPerRequest)),
        failed: pairs.some(({ our, theirs }) => our.failures > 0 || theirs.failures > 0),
      };
      return [other, comparison];
    }),
  );
}

/** Per server: the ordinary requests' p99 under the flood over their p99 alone, round by round. */
export function floodEffect(
  runs: Run[],
  alone: string,
  flooded: string,
  servers: string[],
): Record<string, RatioSummary> {
  return Object.fromEntries(
    servers.map((server) => {
      const quiet = byRound(runs, alone, server);
      const ratios = [...byRound(runs, flooded, server)].flatMap(([round, run]) => {
        const before = quiet.get(round);
        return before ? [run.p99Ms / before.p99Ms] : [];
      });
      return [server, summariseRatios(ratios)];
    }),
  );
}

/** One server's runs of one scenario, by round. */
function byRound(runs: Run[], scenario: string, server: string): Map<number, Run> {
  return new Map(
    runs.filter((run) => run.scenario === scenario && run.server === server).map((run) => [run.round, run]),
  );
}

/** The ratio's median and spread, e.g. "1.12 ±4%". */
export function ratioWithSpread(summary: RatioSummary): string {
  return `${summary.median.toFixed(2)} ${formatSpread(summary)}`;
}

/** For tables: the median and spread, and "NOT TRUSTED" when the spread is not below 10%. */
export function formatRatio(summary: RatioSummary): string {
  return `${ratioWithSpread(summary)}${summary.trusted ? '' : ' NOT TRUSTED'}`;
}

export function trustRule(): string {
  return `spread: half the 95% confidence interval of the median round ratio, over the median; trusted below ±${(100 * TRUSTED_SPREAD).toFixed(0)}%`;
}

/** Each status's share of the answers and its count, e.g. "401 0.02% (21), 429 99.98% (104,311)". */
export function statusShares(runs: Measurement[]): string {
  const counts: Record<string, number> = {};
  for (const run of runs)
    for (const [status, count] of Object.entries(run.statuses)) counts[status] = (counts[status] ?? 0) + count;
  const total = Object.values(counts).reduce((sum, count) => sum + count, 0);
  return Object.entries(counts)
    .map(([status, count]) => {
      const percent = (100 * count) / Math.max(total, 1);
      const share = count === total ? '100' : percent.toFixed(percent < 1 || percent > 99 ? 2 : 1);
      return `${status} ${share}% (${count.toLocaleString('en')})`;
    })
    .join(', ');
}

/** A Markdown table, the first `textColumns` columns aligned left, the others (figures) right. */
export function markdownTable(header: string[], rows: string[][], textColumns = 2): string {
  const widths = header.map((title, column) =>
    Math.max(3, title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: string[]): string =>
    `| ${cells.map((cell, column) => (column < textColumns ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0))).join(' | ')} |`;
  const rule = `|${widths.map((width, column) => (column < textColumns ? `${'-'.repeat(width + 2)}` : `${'-'.repeat(width + 1)}:`)).join('|')}|`;
  return [line(header), rule, ...rows.map(line)].join('\n');
}
