// After an incremental tsc: remove what dist/ holds for sources that no longer
// exist (a deleted test would otherwise still run from its old .js).
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const dist = path.join(root, 'dist');

function prune(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      prune(file);
      if (fs.readdirSync(file).length === 0) fs.rmdirSync(file);
      continue;
    }
    const source = entry.name.match(/^(.*)\.js(\.map)?$/);
    if (source && !fs.existsSync(path.join(root, path.relative(dist, dir), `${source[1]}.ts`))) fs.rmSync(file);
  }
}

for (const top of ['api', 'operator', 'test']) if (fs.existsSync(path.join(dist, top))) prune(path.join(dist, top));
