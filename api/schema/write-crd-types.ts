// `make types`: writes api/schema/crd-types.ts from crds/*.yaml (see typegen.ts).
import fs from 'node:fs';
import { GENERATED_TYPES_FILE, generateCrdTypes } from './typegen.js';

fs.writeFileSync(GENERATED_TYPES_FILE, await generateCrdTypes());
console.log(`wrote ${GENERATED_TYPES_FILE}`);
