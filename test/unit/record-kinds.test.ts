// The kinds of record are said once (api/record-kinds.ts): the CRDs of crds/ are its kinds with a
// CRD, the REST API serves a resource at its name, the CLI's nouns follow from it, and the pages of
// docs/ that list a set of kinds list exactly the registry's.
import { expect } from 'chai';
import fs from 'node:fs';
import { parse } from 'yaml';
import { projectPath } from '../../api/paths.js';
import {
  CHANGED_KINDS,
  CRD_KINDS,
  RESOURCE_KINDS,
  SERVED_KINDS,
  TRAIL_KINDS,
  cliNamesOf,
  kindAtSegment,
  pluralOf,
  segmentOf,
  type RecordKind,
} from '../../api/record-kinds.js';
import { backquoted, pageTables } from '../support/page-tables.js';

const read = (page: string): string => fs.readFileSync(projectPath(...page.split('/')), 'utf8');

/** The cells of the row of `page` whose first cell is `first`. */
function row(page: string, first: string): string[] {
  const rows = pageTables(page)
    .flat()
    .filter(([cell]) => cell === first);
  expect(rows, `${page}: one row ${first}`).to.have.length(1);
  return rows[0]!;
}

/** The names in backquotes of the first parentheses of `text`. */
const inParentheses = (text: string): string[] => [...(/\(([^()]*)\)/.exec(text)?.[1] ?? '').matchAll(/`([^`]+)`/g)].map((m) => m[1]!);

/** The names of kinds among `names` (not an endpoint's nor a command's). */
const kindNames = (names: string[]): string[] => names.filter((name) => /^[A-Z][A-Za-z]*$/.test(name));

/** Names listed as a sentence lists them: `A, B and C` (or `A, B, C`). */
const listed = (text: string): string[] => text.split(/, | and /).map((name) => name.trim());

describe('record kinds', function () {
  it('makes plurals as English does', function () {
    expect(['Client', 'AccessPolicy', 'Box', 'Day', 'policy'].map(pluralOf)).to.deep.equal([
      'Clients',
      'AccessPolicies',
      'Boxes',
      'Days',
      'policies',
    ]);
  });

  it('has a kind with a CRD for each CRD of crds/, in its file, named and in the plural as Kubernetes serves it', function () {
    const crds = fs
      .readdirSync(projectPath('crds'))
      .filter((file) => file.endsWith('.yaml'))
      .map((file) => ({ file, names: (parse(read(`crds/${file}`)) as { spec: { names: { kind: string; plural: string } } }).spec.names }));
    expect(crds.map((crd) => crd.names.kind).sort()).to.deep.equal([...CRD_KINDS].sort());
    for (const { file, names } of crds) {
      expect(file, names.kind).to.equal(`${names.kind.toLowerCase()}.yaml`);
      expect(names.plural, names.kind).to.equal(pluralOf(names.kind).toLowerCase());
    }
  });

  it('serves each kind of the resource API at its name, as its routes, the OpenAPI document and the CLI address it', function () {
    for (const kind of RESOURCE_KINDS) expect(segmentOf(kind)).to.equal(kind);
  });

  it('knows the kind a path segment reads and writes, and nothing else', function () {
    expect(['users', 'groups', 'Session', 'Client', 'Decision', 'constructor', ''].map(kindAtSegment)).to.deep.equal([
      'User',
      'Group',
      'Session',
      'Client',
      undefined,
      undefined,
      undefined,
    ]);
  });

  it("names a kind's CLI command by its noun, with the plurals and the kind's own name as aliases", function () {
    expect(cliNamesOf('Client')).to.deep.equal({ name: 'client', aliases: ['clients'] });
    expect(cliNamesOf('AccessPolicy')).to.deep.equal({ name: 'policy', aliases: ['policies', 'accesspolicy', 'accesspolicies'] });
    expect(cliNamesOf('IdentityProvider')).to.deep.equal({ name: 'idp', aliases: ['idps', 'identityprovider', 'identityproviders'] });
  });

  describe('the pages of docs/ list the kinds it declares', function () {
    const expectKinds = (named: string[], kinds: readonly RecordKind[]): void => {
      expect(named).to.deep.equal([...kinds]);
    };

    it("Audit: the kinds of `record_changed`, and the records the trail's events are searched by", function () {
      expectKinds(inParentheses(row('docs/operations/audit.md', '`record_changed`')[1]!), CHANGED_KINDS);
      const searched = /\(`resource_type`, `resource_id`: ([^()]*(?:\([^()]*\)[^()]*)*)\)/.exec(read('docs/operations/audit.md'));
      expect(searched, 'docs/operations/audit.md: “(`resource_type`, `resource_id`: …)”').to.not.equal(null);
      expectKinds(backquoted(searched![1]!), TRAIL_KINDS);
    });

    it('the REST API: the kinds served at their name, and the record an audit event names', function () {
      const served = /^((?:`\w+`(?:, | and ))+`\w+`) answer `GET \/<Type>`/m.exec(read('docs/reference/rest-api.md'));
      expect(served, 'docs/reference/rest-api.md: “`Client`, … answer `GET /<Type>`”').to.not.equal(null);
      expectKinds(
        backquoted(served![1]!),
        SERVED_KINDS.filter((kind) => segmentOf(kind) === kind),
      );
      expectKinds(kindNames(inParentheses(row('docs/reference/rest-api.md', '`resource`')[1]!)), TRAIL_KINDS);
    });

    it("access control: every write's body is the policies' to read", function () {
      // A row of a table inside a list item: indented, so not one of pageTables'.
      const body = /^ *\| `body` \| on writes \(`PUT` and `POST` of ([^;)]*)[;)]/m.exec(read('docs/concepts/access-control.md'));
      expect(body, 'docs/concepts/access-control.md: the row `body`').to.not.equal(null);
      const writes = backquoted(body![1]!);
      const served = SERVED_KINDS.map((kind) => (segmentOf(kind) === kind ? kind : `/${segmentOf(kind)}`));
      expect(writes.sort()).to.deep.equal(served.sort());
    });

    it('Webhooks: the kinds of `io.boxauth.resource.*`', function () {
      const cell = row('docs/guides/sign-out-everywhere.md', '`io.boxauth.resource.created`, `.changed`, `.deleted`')[1]!;
      expect(listed(cell)).to.deep.equal(RESOURCE_KINDS.map(pluralOf));
    });

    it('Kubernetes: the kinds with a CRD, as boxauth-view reads them and as what boxauth is says', function () {
      const view = /^read (.*), and their status$/.exec(row('docs/kubernetes/install.md', '`boxauth-view`')[1]!);
      expect(listed(view?.[1] ?? '')).to.deep.equal(CRD_KINDS.map(pluralOf));
      const settings = /every setting as a resource \(([^)]*)\)/.exec(read('docs/what-is-boxauth.md'));
      expectKinds(backquoted(settings?.[1] ?? ''), CRD_KINDS);
    });

    it('GitOps: Argo CD is given the health check of every kind with a CRD, each way the guide shows', function () {
      const page = read('docs/guides/gitops.md');
      expectKinds(/boxauth\.io\/\{([\w,]+)\}\/health\.lua/.exec(page)?.[1]?.split(',') ?? [], CRD_KINDS);
      expectKinds(
        [...page.matchAll(/--set-file "configs\.cm\.resource\\\.customizations\\\.health\\\.boxauth\\\.io_(\w+)=/g)].map((m) => m[1]!),
        CRD_KINDS,
      );
      expectKinds(/^for kind in ([\w ]+); do$/m.exec(page)?.[1]?.split(' ') ?? [], CRD_KINDS);
    });
  });
});
