// How long a peer (or boxauth) was warmed before it was measured, and the rate of each warm-up
// window: the reader sees that the rate had stopped rising (../measure.ts, steadyWarmup).
import type { Measured } from '../measure.js';

export const warmedFor = (m: Measured): string =>
  `${m.warmup?.seconds ?? 0} s (${(m.warmup?.rates ?? []).map((r) => Math.round(r).toLocaleString('en')).join(', ')}/s)`;
