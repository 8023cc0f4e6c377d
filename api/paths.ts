// Files the compiled code reads from the source tree (migrations, CRDs, UI assets).
// Compiled modules live in dist/, so paths are resolved from the project root:
// the nearest directory above this module holding package.json.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(start: string): string {
  for (let dir = start; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package.json above ${start}`);
  }
}

export const PROJECT_ROOT = findRoot(path.dirname(fileURLToPath(import.meta.url)));

export function projectPath(...parts: string[]): string {
  return path.join(PROJECT_ROOT, ...parts);
}
