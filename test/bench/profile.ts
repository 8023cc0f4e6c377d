// Reads V8 CPU profiles (.cpuprofile, from `BENCH_PROFILE=<dir> make bench`) and
// prints where the API processes spent their time: self time by function, and
// by package (express, pg, pino, …), with idle time left out.
// Usage: node dist/test/bench/profile.js <dir or files…>
import fs from 'node:fs';
import path from 'node:path';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

function area(url: string): string {
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1]!;
  if (url.includes('/dist/'))
    return `boxauth ${url
      .slice(url.indexOf('/dist/') + 6)
      .split('/')
      .slice(0, 2)
      .join('/')}`;
  if (url.startsWith('node:')) return url;
  return url ? 'other' : 'native/GC';
}

const files = process.argv.slice(2).flatMap((p) =>
  fs.statSync(p).isDirectory()
    ? fs
        .readdirSync(p)
        .filter((f) => f.endsWith('.cpuprofile'))
        .map((f) => path.join(p, f))
    : [p],
);
const byFunction = new Map<string, number>();
const byArea = new Map<string, number>();
let total = 0;
for (const file of files) {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  profile.samples.forEach((id, i) => {
    const node = nodes.get(id)!;
    const name = node.callFrame.functionName || '(anonymous)';
    if (name === '(idle)') return;
    const us = profile.timeDeltas[i] ?? 0;
    total += us;
    const key = `${name} ${node.callFrame.url.replace(/^.*\/(dist|node_modules)\//, '$1/')}:${node.callFrame.lineNumber + 1}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + us);
    const a = ['(garbage collector)', '(program)'].includes(name) ? name : area(node.callFrame.url);
    byArea.set(a, (byArea.get(a) ?? 0) + us);
  });
}
const top = (m: Map<string, number>, n: number): string =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, us]) => `${((100 * us) / total).toFixed(1).padStart(5)}%  ${k}`)
    .join('\n');
process.stdout.write(
  `busy time: ${(total / 1e6).toFixed(1)} s in ${files.length} profiles\n\nby area:\n${top(byArea, 20)}\n\nby function (self time):\n${top(byFunction, 30)}\n`,
);
