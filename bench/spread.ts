/**
 * How far a ratio measured over rounds can be trusted. Each round measures every server once, so
 * each round gives one ratio (ours / another server). The figure reported is the median of the
 * rounds' ratios; its spread is half the width of the 95% confidence interval of that median, as a
 * share of the median: ±4% means the median of many more rounds would, 95 times in 100, lie within
 * about 4% of the one printed.
 *
 * The interval assumes nothing about how the rounds scatter. Sorted, the k-th lowest and the k-th
 * highest round bound the median with a probability that the binomial distribution gives; k is the
 * largest for which that probability is at least 95%. With 6 to 8 rounds the interval runs from the
 * lowest round to the highest, with 9 to 11 from the second lowest to the second highest, with 12
 * to 14 from the third. Below 6 rounds even the lowest and highest do not reach 95%: no spread, and
 * the ratio is not trusted.
 */

/** A ratio whose spread is below this share of its median is trusted. */
export const TRUSTED_SPREAD = 0.1;
/** The fewest rounds whose lowest and highest bound the median with 95% confidence. */
export const ROUNDS_FOR_A_SPREAD = 6;

export type RatioSummary = {
  /** One ratio per round, in round order. */
  perRound: number[];
  median: number;
  /** Half the 95% interval's width over the median, or null below ROUNDS_FOR_A_SPREAD rounds. */
  spread: number | null;
  trusted: boolean;
};

export function summariseRatios(perRound: number[]): RatioSummary {
  const sorted = perRound.filter((ratio) => Number.isFinite(ratio)).sort((a, b) => a - b);
  const middle = median(sorted);
  const k = orderOfInterval(sorted.length);
  const low = sorted[k - 1];
  const high = sorted[sorted.length - k];
  const spread = k === 0 || low === undefined || high === undefined || !(middle > 0) ? null : (high - low) / 2 / middle;
  return { perRound, median: middle, spread, trusted: spread !== null && spread < TRUSTED_SPREAD };
}

/** "±4%", or "n/a (3 rounds)" when there are too few rounds for a spread. */
export function formatSpread(summary: RatioSummary): string {
  return summary.spread === null
    ? `n/a (${summary.perRound.length} round${summary.perRound.length === 1 ? '' : 's'})`
    : `±${(100 * summary.spread).toFixed(0)}%`;
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const half = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[half] ?? NaN) : ((sorted[half - 1] ?? NaN) + (sorted[half] ?? NaN)) / 2;
}

/**
 * The largest k such that the k-th lowest and k-th highest of n values hold the median with at
 * least 95% probability, or 0 if none does. Each value falls below the median with probability
 * 1/2, so the interval misses it when k-1 or fewer values fall on one side: twice the binomial
 * tail P(X <= k-1), X ~ Binomial(n, 1/2).
 */
function orderOfInterval(n: number): number {
  let best = 0;
  let tail = 0; // P(X <= k-1)
  let coefficient = 1; // C(n, k-1)
  for (let k = 1; 2 * k <= n; k++) {
    tail += coefficient / 2 ** n;
    coefficient = (coefficient * (n - k + 1)) / k;
    if (1 - 2 * tail >= 0.95) best = k;
    else break;
  }
  return best;
}
