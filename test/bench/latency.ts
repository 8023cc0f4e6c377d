// Percentiles of latencies measured one at a time (not by wrk): make bench-operator's
// apply-to-token times, make bench-tenants' first tokens of idle boxes.
export interface LatencySummary {
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

export const summary = (ms: number[]): LatencySummary => {
  const s = [...ms].sort((a, b) => a - b);
  return { p50: percentile(s, 50), p90: percentile(s, 90), p99: percentile(s, 99), max: s[s.length - 1]! };
};
