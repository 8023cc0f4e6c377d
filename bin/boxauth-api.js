#!/usr/bin/env node
// The `boxauth-api` command (package.json "bin"): the box API outside Kubernetes, as `make run`
// starts it, configured by the environment (`boxauth-api --help`; without DATABASE_URL, an embedded
// PostgreSQL in $BOXAUTH_DATA_DIR, by default .boxauth/ of the current directory).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const api = new URL('../dist/api/main.js', import.meta.url);
if (!existsSync(fileURLToPath(api))) {
  process.stderr.write('boxauth-api: the API is not built yet; run `make build` (or `npm ci`) in the boxauth directory\n');
  process.exit(1);
}
await import(api.href);
