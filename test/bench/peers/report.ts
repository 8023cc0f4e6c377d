// bench-peers' table: each target's figures, then boxauth's ratio to each peer
// (tokens/s, CPU per token), then what each target does for a token, so that
// no figure is read without what it pays for.
import type { DbCounters } from '../db-stats.js';
import type { Measured } from '../measure.js';
import { textTable } from '../table.js';

export interface Row extends Measured {
  key: string;
  title: string;
  perToken: string;
  /** PostgreSQL's work per token (warm-up and load together). */
  db: DbCounters;
}

export interface Skipped {
  key: string;
  title: string;
  reason: string;
}

const BOXAUTH = ['boxauth_opaque', 'boxauth_jwt'];
const cpu = (r: Row): number => r.cpuUs.api + r.cpuUs.postgres;
const times = (x: number): string => (x >= 10 ? x.toFixed(0) : x.toFixed(1)) + '×';

export function report(rows: Row[], skipped: Skipped[]): string {
  const peers = rows.filter((r) => !BOXAUTH.includes(r.key));
  // ratio columns only where there is something to compare
  const boxauth = peers.length > 0 ? rows.filter((r) => BOXAUTH.includes(r.key)) : [];
  const head = [
    'target',
    'tokens/s',
    'p50 ms',
    'p99 ms',
    'non-2xx',
    'CPU µs/token target+PG',
    'peak RSS MB',
    'PG xacts/token',
    'rows/token',
    'WAL B/token',
    'fsyncs/token',
    'warmed s',
    ...boxauth.map((b) => `${b.key === 'boxauth_jwt' ? 'JWT' : 'opaque'} boxauth ×`),
  ];
  const body = rows.map((r) => [
    r.title,
    Math.round(r.rps).toLocaleString('en'),
    r.p50Ms.toFixed(2),
    r.p99Ms.toFixed(2),
    String(r.failures),
    `${r.cpuUs.api.toFixed(0)}+${r.cpuUs.postgres.toFixed(0)}`,
    r.rssMb.toFixed(0),
    r.db.transactions.toFixed(2),
    r.db.rowsWritten.toFixed(2),
    r.db.walBytes.toFixed(0),
    r.db.walFsyncs === undefined ? '?' : r.db.walFsyncs.toFixed(2),
    String(r.warmup?.seconds ?? 0),
    ...boxauth.map((b) => (BOXAUTH.includes(r.key) ? '' : times(b.rps / r.rps))),
  ]);
  const lines = [textTable(head, body, [0])];
  if (boxauth.length > 0) {
    lines.push('');
    for (const b of boxauth) {
      for (const p of peers) {
        lines.push(`${b.title} against ${p.title}: ${times(b.rps / p.rps)} the tokens/s, ${times(cpu(p) / cpu(b))} less CPU per token`);
      }
    }
  }
  lines.push('', 'per token:');
  for (const r of rows) lines.push(`  ${r.title}: ${r.perToken}`);
  for (const s of skipped) lines.push(`  ${s.title}: NOT MEASURED: ${s.reason}`);
  return lines.join('\n');
}
