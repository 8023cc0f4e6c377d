#!/usr/bin/env node
// The `boxauth` command (package.json "bin"): runs the compiled CLI.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const cli = new URL('../dist/api/cli/main.js', import.meta.url);
if (!existsSync(fileURLToPath(cli))) {
  process.stderr.write('boxauth: the CLI is not built yet; run `make build` (or `npm ci`) in the boxauth directory\n');
  process.exit(1);
}
await import(cli.href);
