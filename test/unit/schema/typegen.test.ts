// The record types come from the CRDs (api/schema/typegen.ts): the committed
// api/schema/crd-types.ts must be what `make types` writes from crds/ today.
import { expect } from 'chai';
import fs from 'node:fs';
import { GENERATED_TYPES_FILE, generateCrdTypes, typeOf } from '../../../api/schema/typegen.js';

describe('types generated from the CRDs', function () {
  it('api/schema/crd-types.ts matches crds/ (run `make types` after changing a CRD)', async function () {
    this.timeout(20000); // prettier's first load
    expect(fs.readFileSync(GENERATED_TYPES_FILE, 'utf8'), 'api/schema/crd-types.ts is stale: run `make types`').to.equal(
      await generateCrdTypes(),
    );
  });

  it('maps each structural schema shape to its TypeScript type', function () {
    const schema = {
      type: 'object',
      required: ['name'],
      properties: {
        name: { type: 'string', description: 'who */ it is' },
        kinds: { type: 'array', items: { type: 'string', enum: ['a', 'b'] } },
        port: { 'x-kubernetes-int-or-string': true },
        open: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
        labels: { type: 'object', additionalProperties: { type: 'string' } },
        extra: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true, properties: { on: { type: 'boolean' } } },
      },
    };
    expect(typeOf(schema)).to.equal(
      [
        '{',
        '  /**',
        '   * who *\\/ it is',
        '   */',
        '  name: string;',
        '  kinds?: ("a" | "b")[];',
        '  port?: number | string;',
        '  open?: Record<string, unknown>;',
        '  labels?: Record<string, string>;',
        '  extra?: {',
        '    on?: boolean;',
        '    [field: string]: unknown;',
        '  };',
        '}',
      ].join('\n'),
    );
  });
});
