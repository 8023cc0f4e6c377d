// `make docs`: writes the generated reference pages, and the generated sections of other pages (see reference.ts).
import fs from 'node:fs';
import path from 'node:path';
import { configurationPage, factorKindsPage, GENERATED_SECTIONS, REFERENCE_PAGES, resourcesPage, withSection } from './reference.js';

for (const [file, text] of [
  [REFERENCE_PAGES.configuration, configurationPage()],
  [REFERENCE_PAGES.resources, resourcesPage()],
  [REFERENCE_PAGES.factorKinds, factorKindsPage()],
] as const) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
  console.log(`wrote ${path.relative(process.cwd(), file)}`);
}

for (const section of GENERATED_SECTIONS) {
  const before = fs.readFileSync(section.page, 'utf8');
  const after = withSection(before, section);
  if (after === before) continue;
  fs.writeFileSync(section.page, after);
  console.log(`wrote the ${section.name} of ${path.relative(process.cwd(), section.page)}`);
}
