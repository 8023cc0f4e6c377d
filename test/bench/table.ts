// The text tables `make bench` and `make bench-peers` print: names and remarks
// left-aligned (the first and last columns unless told), figures right-aligned.
export function textTable(head: string[], body: string[][], leftAligned: number[] = [0, head.length - 1]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => (b[i] ?? '').length)));
  const line = (cells: string[]): string =>
    cells.map((c, i) => (leftAligned.includes(i) ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}
