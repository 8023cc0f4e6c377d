// `make crd-enums` (the first step of `make generate`): writes the CRDs' values the code lists (see crd-enums.ts).
import fs from 'node:fs';
import path from 'node:path';
import { generatedCrds } from './crd-enums.js';

for (const { file, text } of generatedCrds()) {
  if (fs.readFileSync(file, 'utf8') === text) continue;
  fs.writeFileSync(file, text);
  console.log(`wrote ${path.relative(process.cwd(), file)}`);
}
