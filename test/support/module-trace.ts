// Which modules a box process loaded: given to node as `--import dist/test/support/module-trace.js`
// with MODULE_TRACE_FILE set, it writes, when the process exits, every file the process loaded,
// CommonJS (require's cache) and ECMAScript modules (a load hook, ./module-trace-hooks.ts) alike,
// one a line. test/integration/idle-modules.test.ts reads it: a box loads what it uses.
import fs from 'node:fs';
import { createRequire, register } from 'node:module';

const file = process.env.MODULE_TRACE_FILE;
if (file) {
  const esm = `${file}.esm`;
  fs.writeFileSync(esm, '');
  register(new URL('./module-trace-hooks.js', import.meta.url), { data: { file: esm } });
  const cache = (createRequire(import.meta.url)('node:module') as { _cache: Record<string, unknown> })._cache;
  process.on('exit', () => {
    const loaded = [...Object.keys(cache), ...fs.readFileSync(esm, 'utf8').split('\n').filter(Boolean)];
    fs.writeFileSync(file, `${loaded.join('\n')}\n`);
  });
}

/** The files of `trace` (a MODULE_TRACE_FILE written) inside node_modules/`pkg`/. */
export function loadedOf(trace: string, pkg: string): string[] {
  return fs
    .readFileSync(trace, 'utf8')
    .split('\n')
    .filter((f) => f.includes(`/node_modules/${pkg}/`));
}
