// The factor kinds are said once (api/factor-kinds.ts): what a person holds counts toward "has a
// factor" by it, and every list that names the kinds — the REST API's enum, the pages' labels, the
// audit's and the Shared Signals' pages — names exactly its kinds.
import { expect } from 'chai';
import fs from 'node:fs';
import { pathToFileURL } from 'node:url';
import {
  FACTOR_KIND_NAMES,
  FACTOR_KINDS,
  NO_FACTORS,
  RECOVERY_CODES,
  factorCount,
  hasFactor,
  ssfCredentialOf,
} from '../../api/factor-kinds.js';
import { projectPath } from '../../api/paths.js';
import { peopleSchemas } from '../../api/schema/openapi.js';
import { de } from '../../api/messages/de.js';
import { en } from '../../api/messages/en.js';

const read = (file: string): string => fs.readFileSync(projectPath(...file.split('/')), 'utf8');
const none = NO_FACTORS;

describe('factor kinds', () => {
  it('counts every factor a person holds, and none when they hold none', () => {
    expect(hasFactor(none)).to.equal(false);
    expect(factorCount({ ...none, passkey: 2, totp: 0 })).to.equal(2);
    expect(factorCount({ ...none, passkey: 0, totp: 1 })).to.equal(1);
    expect(factorCount({ ...none, passkey: 2, totp: 1 })).to.equal(3);
    expect(hasFactor({ ...none, passkey: 0, totp: 1 })).to.equal(true);
    expect(hasFactor({ ...none, passkey: 1, totp: 0 })).to.equal(true);
    expect(hasFactor({ ...none, email: 1 })).to.equal(true);
    expect(factorCount({ ...none, passkey: 1, totp: 1, email: 1 })).to.equal(3);
  });

  it('names each kind by its key, and labels it in every language', () => {
    for (const kind of FACTOR_KIND_NAMES) {
      expect(FACTOR_KINDS[kind].kind).to.equal(kind);
      expect(en[FACTOR_KINDS[kind].label], kind).to.be.a('string');
      expect(de[FACTOR_KINDS[kind].label], kind).to.be.a('string');
    }
  });

  it('gives the REST API exactly its kinds', () => {
    const factors = (peopleSchemas() as { Factors: { properties: { factors: { items: { properties: { kind: { enum: string[] } } } } } } })
      .Factors;
    expect(factors.properties.factors.items.properties.kind.enum).to.deep.equal(FACTOR_KIND_NAMES);
  });

  it("is the audit page's list of a factor event's kinds: the generated page of kinds, with every kind and the recovery codes", () => {
    const row = read('docs/operations/audit.md')
      .split('\n')
      .find((line) => line.startsWith('| `factor` |'));
    expect(row).to.include('[the kinds of second factor](../reference/factor-kinds.md)');
    const listed = read('docs/reference/factor-kinds.md')
      .split('\n')
      .flatMap((line) => /^\| `([^`]+)` \|/.exec(line)?.slice(1) ?? [])
      .slice(1); // the header's `kind`
    expect(listed).to.deep.equal([...FACTOR_KIND_NAMES, RECOVERY_CODES.kind]);
  });

  it("is the Shared Signals page's list of credential types: the generated page of kinds", () => {
    const row = read('docs/guides/sign-out-everywhere.md')
      .split('\n')
      .find((line) => line.startsWith('| CAEP `credential-change` |'));
    expect(row).to.include('(../reference/factor-kinds.md)');
    const page = read('docs/reference/factor-kinds.md');
    for (const kind of [...FACTOR_KIND_NAMES, RECOVERY_CODES.kind] as const)
      expect(page, kind).to.match(new RegExp(`^\\| \`${kind}\` \\|.*\\| \`${ssfCredentialOf(kind)}\` \\|`, 'm'));
  });

  it('is what `make generate` gathers from the ways (api/factor-kinds-declared.ts is not stale)', async () => {
    const { declaredKindsFile, DECLARED } = (await import(pathToFileURL(projectPath('scripts', 'write-factor-kinds.mjs')).href)) as {
      declaredKindsFile(root: string): Promise<string>;
      DECLARED: string;
    };
    expect(read(DECLARED), 'stale: run make generate').to.equal(await declaredKindsFile(projectPath()));
  });
});
