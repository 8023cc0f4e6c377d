// The tables of docs/kubernetes/conditions.md are what people read before they
// write `kubectl wait` or an alert; operator/reasons.ts is what the operator
// writes. Each must say exactly what the other says, down to which Ready=False
// reasons are Reconciling (kstatus: InProgress) and which are Stalled (Failed).
import { expect } from 'chai';
import { REASONS, type ReasonKind, type ReasonUse } from '../../../operator/reasons.js';
import { backquoted, pageTables } from '../../support/page-tables.js';

/** One line per (kind, where, reason), from the page. */
function documented(): string[] {
  const lines: string[] = [];
  for (const [header, ...rows] of pageTables('docs/kubernetes/conditions.md')) {
    if (header!.join('|') === 'kind|`Ready=True`|`Ready=False`, `Reconciling=True`|`Ready=False`, `Stalled=True`') {
      for (const [kind, ready, waiting, stalled] of rows) {
        for (const reason of backquoted(ready!)) lines.push(`${kind} Ready=True ${reason}`);
        for (const reason of backquoted(waiting!)) lines.push(`${kind} Ready=False+Reconciling ${reason}`);
        for (const reason of backquoted(stalled!)) lines.push(`${kind} Ready=False+Stalled ${reason}`);
      }
    } else if (header!.join('|') === 'kind|condition|`True`|`False`|`Unknown`') {
      for (const [kind, condition, whenTrue, whenFalse, whenUnknown] of rows) {
        const [type] = backquoted(condition!);
        for (const reason of backquoted(whenTrue!)) lines.push(`${kind} ${type}=True ${reason}`);
        for (const reason of backquoted(whenFalse!)) lines.push(`${kind} ${type}=False ${reason}`);
        for (const reason of backquoted(whenUnknown ?? '')) lines.push(`${kind} ${type}=Unknown ${reason}`);
      }
    } else if (header!.join('|') === 'kind|Normal Events') {
      for (const [kind, events] of rows) for (const reason of backquoted(events!)) lines.push(`${kind} Normal Event ${reason}`);
    } else {
      expect.fail(`a table the test does not know: ${header!.join(' | ')}`);
    }
  }
  return lines.sort();
}

/** The same lines, from operator/reasons.ts. */
function declared(): string[] {
  const lines: string[] = [];
  for (const [kind, reasons] of Object.entries(REASONS) as [ReasonKind, Record<string, ReasonUse>][]) {
    for (const [reason, use] of Object.entries(reasons)) {
      if ('event' in use) lines.push(`${kind} Normal Event ${reason}`);
      else lines.push(`${kind} ${use.condition}=${use.status}${use.then ? `+${use.then}` : ''} ${reason}`);
    }
  }
  return lines.sort();
}

describe('operator reasons', function () {
  it('docs/kubernetes/conditions.md documents every reason of operator/reasons.ts, with its kind, condition and status', function () {
    const page = new Set(documented());
    expect(declared().filter((line) => !page.has(line))).to.deep.equal([]);
  });

  it('docs/kubernetes/conditions.md lists no reason operator/reasons.ts does not declare', function () {
    const module = new Set(declared());
    expect(documented().filter((line) => !module.has(line))).to.deep.equal([]);
    expect(documented()).to.have.length.above(30); // the tables were found and read
  });
});
