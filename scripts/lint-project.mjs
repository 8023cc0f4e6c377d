// The TypeScript project `make lint-changed` gives ESLint: the files it lints and the tree's
// declarations, extending tsconfig.json. TypeScript loads what they import itself, so the
// type-aware rules see the same types as in the whole project, without reading the hundreds of
// files a change cannot touch. `make lint` keeps the whole project (eslint.config.js).
//
//   node scripts/lint-project.mjs <project.json> <file.ts>…
import fs from 'node:fs';
import path from 'node:path';
import process from 'node:process';

const root = path.resolve(import.meta.dirname, '..');
const [project, ...files] = process.argv.slice(2);
const declarations = ['api', 'operator', 'test'].flatMap((dir) =>
  fs
    .readdirSync(path.join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.d.ts'))
    .map((f) => path.join(dir, f)),
);
const from = path.dirname(path.resolve(project));
const relative = (file) => path.relative(from, path.resolve(root, file)).split(path.sep).join('/');
const config = { extends: relative('tsconfig.json'), include: [], files: [...new Set([...files, ...declarations])].map(relative) };
fs.writeFileSync(project, `${JSON.stringify(config, null, 2)}\n`);
