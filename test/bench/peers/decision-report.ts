// bench-peers' decision table: each decision point's figures, side by side (closed loop, and the
// latency at one fixed rate for all), then boxauth's ratio to each peer on the same door with the
// same JWT, then what each checks for a decision, so that no figure is read without what it pays for.
import { textTable } from '../table.js';
import type { DecisionRow } from './decide.js';
import type { Skipped } from './report.js';

const times = (x: number): string => (x >= 10 ? x.toFixed(0) : x.toFixed(1)) + '×';
const isBoxauth = (r: DecisionRow): boolean => r.key.startsWith('boxauth_');

export function decisionReport(rows: DecisionRow[], skipped: Skipped[]): string {
  const head = [
    'decision point',
    'door',
    'decisions/s',
    'p50 ms',
    'p99 ms',
    'failed',
    'CPU µs/decision',
    'RSS MB, all processes',
    'peak RSS MB, one process',
    `p50 ms at ${(rows[0]?.atRate.rate ?? 0).toLocaleString('en')}/s`,
    'p99 ms at that rate',
    'warmed s',
  ];
  const body = rows.map((r) => [
    r.title,
    r.door === 'grpc' ? 'gRPC' : 'HTTP',
    Math.round(r.rps).toLocaleString('en'),
    r.p50Ms.toFixed(2),
    r.p99Ms.toFixed(2),
    String(r.failures),
    r.cpuUs.api.toFixed(0),
    r.rssTotalMb.toFixed(0),
    r.rssMb.toFixed(0),
    r.atRate.p50Ms.toFixed(2),
    r.atRate.p99Ms.toFixed(2) + (r.atRate.failures ? ` (${r.atRate.failures} failed)` : ''),
    String(r.warmup?.seconds ?? 0),
  ]);
  const lines = [textTable(head, body, [0, 1])];
  const peers = rows.filter((r) => !isBoxauth(r));
  if (peers.length > 0) lines.push('');
  for (const p of peers) {
    const b = rows.find((r) => r.key === `boxauth_${p.door}_jwt`);
    if (!b) continue;
    lines.push(
      `${b.title} against ${p.title}: ${times(b.rps / p.rps)} the decisions/s, ${times(b.cpuUs.api / p.cpuUs.api)} the CPU per decision, ` +
        `${times(b.rssTotalMb / p.rssTotalMb)} the memory; at ${b.atRate.rate.toLocaleString('en')}/s ${times(b.atRate.p99Ms / p.atRate.p99Ms)} the p99`,
    );
  }
  lines.push('', 'per decision:');
  const seen = new Set<string>();
  for (const r of rows) {
    const who = isBoxauth(r) ? 'boxauth' : r.title;
    if (seen.has(who)) continue;
    seen.add(who);
    lines.push(`  ${who}: ${r.checks}`);
  }
  for (const s of skipped) lines.push(`  ${s.title}: NOT MEASURED: ${s.reason}`);
  return lines.join('\n');
}
