// The tables of docs/kubernetes/conditions.md are what people read before they
// write `kubectl wait` or an alert; operator/reasons.ts is what the operator
// writes. Each must say exactly what the other says, down to which Ready=False
// reasons are Reconciling (kstatus: InProgress) and which are Stalled (Failed).
import { expect } from 'chai';
import fs from 'node:fs';
import { projectPath } from '../../../api/paths.js';
import { REASONS, type ReasonKind, type ReasonUse } from '../../../operator/reasons.js';

/** The rows of every table of the page, each row's cells as text. */
function pageTables(): string[][][] {
  const page = fs.readFileSync(projectPath('docs', 'kubernetes', 'conditions.md'), 'utf8');
  const tables: string[][][] = [];
  let current: string[][] | undefined;
  for (const line of page.split('\n')) {
    if (!line.startsWith('|')) {
      current = undefined;
      continue;
    }
    if (/^\|[-| ]+\|$/.test(line)) continue; // the separator under the header
    if (!current) tables.push((current = []));
    current.push(
      line
        .slice(1, -1)
        .split('|')
        .map((cell) => cell.trim()),
    );
  }
  return tables;
}

/** The names in backquotes, leaving out what parentheses explain. */
const names = (cell: string): string[] => [...cell.replace(/\([^()]*\)/g, '').matchAll(/`([^`]+)`/g)].map((m) => m[1]!);

/** One line per (kind, where, reason), from the page. */
function documented(): string[] {
  const lines: string[] = [];
  for (const [header, ...rows] of pageTables()) {
    if (header!.join('|') === 'kind|`Ready=True`|`Ready=False`, `Reconciling=True`|`Ready=False`, `Stalled=True`') {
      for (const [kind, ready, waiting, stalled] of rows) {
        for (const reason of names(ready!)) lines.push(`${kind} Ready=True ${reason}`);
        for (const reason of names(waiting!)) lines.push(`${kind} Ready=False+Reconciling ${reason}`);
        for (const reason of names(stalled!)) lines.push(`${kind} Ready=False+Stalled ${reason}`);
      }
    } else if (header!.join('|') === 'kind|condition|`True`|`False`') {
      for (const [kind, condition, whenTrue, whenFalse] of rows) {
        const [type] = names(condition!);
        for (const reason of names(whenTrue!)) lines.push(`${kind} ${type}=True ${reason}`);
        for (const reason of names(whenFalse!)) lines.push(`${kind} ${type}=False ${reason}`);
      }
    } else if (header!.join('|') === 'kind|Normal Events') {
      for (const [kind, events] of rows) for (const reason of names(events!)) lines.push(`${kind} Normal Event ${reason}`);
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
