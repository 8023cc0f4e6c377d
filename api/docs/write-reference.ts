// `make docs`: writes the generated reference pages (see reference.ts).
import fs from 'node:fs';
import path from 'node:path';
import { configurationPage, REFERENCE_PAGES, resourcesPage } from './reference.js';

for (const [file, text] of [
  [REFERENCE_PAGES.configuration, configurationPage()],
  [REFERENCE_PAGES.resources, resourcesPage()],
] as const) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
  console.log(`wrote ${path.relative(process.cwd(), file)}`);
}
