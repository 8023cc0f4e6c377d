// No module of api/ or operator/ imports, through others, a module that imports it: the floors
// (eslint-floors.js) keep folders from going round, and this keeps the files inside a folder
// from it too. `import type` counts: a circle of types is still two files a reader must read
// together.
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import ts from 'typescript';

/** The circles left to break, each as its files, sorted. None may be added. */
const LEFT: string[][] = [];

/** Every .ts file under `dir`, relative to the repository. */
function sources(dir: string): string[] {
  return fs
    .readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
    .map((f) => path.join(dir, f).split(path.sep).join('/'));
}

/** Each file's relative imports (values, types, re-exports, dynamic), as files of the repository. */
function importGraph(files: string[]): Map<string, string[]> {
  const known = new Set(files);
  return new Map(
    files.map((file) => {
      const { importedFiles } = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, true);
      const targets = importedFiles
        .map((i) => i.fileName)
        .filter((name) => name.startsWith('.'))
        .map((name) => path.posix.join(path.posix.dirname(file), name).replace(/\.js$/, '.ts'))
        .filter((target) => known.has(target));
      return [file, targets];
    }),
  );
}

/** The strongly connected components of more than one file (Tarjan): each a circle, or circles sharing files. */
function circles(graph: Map<string, string[]>): string[][] {
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (file: string): void => {
    order.set(file, order.size);
    low.set(file, order.get(file)!);
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (!order.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (stack.includes(next)) low.set(file, Math.min(low.get(file)!, order.get(next)!));
    }
    if (low.get(file) !== order.get(file)) return;
    const component = stack.splice(stack.indexOf(file));
    if (component.length > 1) found.push(component.sort());
  };
  for (const file of graph.keys()) if (!order.has(file)) visit(file);
  return found.sort();
}

describe('import circles', function () {
  it('api/ and operator/ have none but those left to break', function () {
    const found = circles(importGraph([...sources('api'), ...sources('operator')]));
    expect(found, 'a circle is not in LEFT: break it, or, when a LEFT one is gone, remove it from LEFT').to.deep.equal(LEFT);
  });

  it('finds a circle of two files, and of three', function () {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['a.ts', 'c.ts']],
      ['c.ts', ['d.ts']],
      ['d.ts', ['e.ts']],
      ['e.ts', ['c.ts']],
      ['f.ts', ['a.ts']],
    ]);
    expect(circles(graph)).to.deep.equal([
      ['a.ts', 'b.ts'],
      ['c.ts', 'd.ts', 'e.ts'],
    ]);
  });
});
