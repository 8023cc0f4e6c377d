// The reference pages are generated (`make docs`), and the list they come from is
// the list of what the code reads: neither can drift from the code unnoticed.
import { expect } from 'chai';
import fs from 'node:fs';
import { CONFIG_VARIABLES, OPERATOR_CONFIG_VARIABLES } from '../../../api/config-reference.js';
import {
  configurationPage,
  factorKindsPage,
  GENERATED_SECTIONS,
  REFERENCE_PAGES,
  resourcesPage,
  withSection,
} from '../../../api/docs/reference.js';
import { generatedCrds } from '../../../api/schema/crd-enums.js';
import { projectPath } from '../../../api/paths.js';
import { DEFAULT_BOX_IMAGE } from '../../../operator/config.js';

describe('generated reference pages', function () {
  it('docs/reference/configuration.md, resources.md and factor-kinds.md are what `make docs` writes today', function () {
    expect(fs.readFileSync(REFERENCE_PAGES.factorKinds, 'utf8'), 'stale: run make docs').to.equal(factorKindsPage());
    expect(fs.readFileSync(REFERENCE_PAGES.configuration, 'utf8'), 'stale: run make docs').to.equal(configurationPage());
    expect(fs.readFileSync(REFERENCE_PAGES.resources, 'utf8'), 'stale: run make docs').to.equal(resourcesPage());
  });

  it('the generated sections of other pages (the Webhook event types) are what `make docs` writes today', function () {
    for (const section of GENERATED_SECTIONS) {
      const page = fs.readFileSync(section.page, 'utf8');
      expect(page, `stale: run make docs (${section.name})`).to.equal(withSection(page, section));
    }
  });

  it("the CRDs' values drawn from the code (the Webhook's event types) are what `make generate` writes today", function () {
    for (const { file, text } of generatedCrds())
      expect(fs.readFileSync(file, 'utf8'), `stale: run make generate (${file})`).to.equal(text);
  });

  for (const [source, variables] of [
    ['api/config.ts', CONFIG_VARIABLES],
    ['operator/config.ts', OPERATOR_CONFIG_VARIABLES],
  ] as const) {
    it(`api/config-reference.ts lists every variable ${source} reads, and none it does not`, function () {
      const code = fs.readFileSync(projectPath(...source.split('/')), 'utf8');
      const read = new Set([...code.matchAll(/'((?:BOXAUTH_[A-Z0-9_]+)|(?:OTEL_[A-Z0-9_]+)|DATABASE_URL)'/g)].map((m) => m[1]!));
      const listed = new Set(variables.flatMap((v) => v.names));
      expect(
        [...read].filter((name) => !listed.has(name)),
        'read but not documented',
      ).to.deep.equal([]);
      expect(
        [...listed].filter((name) => !read.has(name)),
        'documented but not read',
      ).to.deep.equal([]);
    });
  }

  it("the operator's default box image is the one the reference names", function () {
    const image = OPERATOR_CONFIG_VARIABLES.find((v) => v.names.includes('BOXAUTH_OPERATOR_BOX_IMAGE'));
    expect(image?.default).to.equal(`\`${DEFAULT_BOX_IMAGE}\``);
  });

  it('the resource reference names every field of every CRD, with its rules', function () {
    const page = resourcesPage();
    for (const field of [
      'spec.grant_types',
      'spec.auth.workload.serviceAccounts[].namespace',
      'spec.engine',
      'spec.urls',
      'spec.trustedIssuers[].issuer',
    ]) {
      expect(page).to.include(`| \`${field}\` |`);
    }
    expect(page).to.include('an implicit client needs auth.implicit.redirect_uri');
  });
});
