// The floors as `make lint` keeps them (eslint-floors.js, from the READMEs' "May import:"
// sentences; api/README.md): an import a README does not name is a lint error, and so is a
// folder no README places. Only the floor rule runs here, over source text given a path, so the
// test needs no type information and no file on disk; a repository made in a temporary folder
// shows a new folder refused, then placed by its README.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'chai';
import { Linter, type Rule } from 'eslint';
import tseslint from 'typescript-eslint';

interface ReadmeRule {
  readme: string;
  tree: string;
  files?: string[];
  targets: { name: string; typesOnly: boolean }[];
}
const { floors } = (await import(pathToFileURL(path.resolve('eslint.config.js')).href)) as { floors: Linter.Config[] };
interface Floor {
  name: string;
  floor: number;
  group: string[];
}
const { floorsRule, layersRule, readmeRules, readFloors, importGraph, circles, MAX_CLIMBS } = (await import(
  pathToFileURL(path.resolve('eslint-floors.js')).href
)) as {
  floorsRule: (root: string) => Rule.RuleModule;
  layersRule: (root: string) => Rule.RuleModule;
  readmeRules: (root: string) => ReadmeRule[];
  readFloors: (root: string) => { floorOf: (file: string) => Floor | undefined; groups: string[][] };
  importGraph: (root: string) => Map<string, string[]>;
  circles: (graph: Map<string, string[]>) => string[][];
  MAX_CLIMBS: number;
};

const TYPESCRIPT: Linter.Config = { files: ['**/*.ts'], languageOptions: { parser: tseslint.parser } };

/** The floor rule's messages for `code` as the file `file` (relative to `root`); `imports`: those about an import only. */
function floorMessages(file: string, code: string, { root = process.cwd(), config = floors, imports = false } = {}): string[] {
  const messages = new Linter({ cwd: root }).verify(code, [TYPESCRIPT, ...config], path.join(root, file));
  return messages.filter((m) => m.ruleId === 'floors/readme' && (!imports || m.nodeType !== 'Program')).map((m) => m.message);
}

/** Whether `file` may not import `from` (its types only, with `types`). */
function refused(file: string, from: string, { types = false } = {}): boolean {
  const code = types ? `import type { X } from '${from}';\nexport type { X };\n` : `import { x } from '${from}';\nexport { x };\n`;
  return floorMessages(file, code, { imports: true }).length > 0;
}

/** A repository in a temporary folder, its files written by `write`; removed by `remove`. */
function scratchRepository(): { root: string; write: (file: string, text: string) => void; remove: () => void } {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'floors-'));
  const write = (file: string, text: string): void => {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), text);
  };
  write(
    'api/README.md',
    'The root, `main.ts`, may import: every folder (`*/`) and the base (`*.ts`).\n\nThe base, every other `*.ts`, may import: nothing more.\n',
  );
  write('api/store/README.md', 'The only SQL.\n\nMay import: the base (`*.ts`).\n\n`store/a.ts` may also import: `people/b.ts`.\n');
  write('api/people/README.md', 'People.\n\nMay import: `store/` and the base (`*.ts`).\n');
  write('api/store/a.ts', 'export const a = 1;\n');
  write('api/people/b.ts', "import { a } from '../store/a.js';\nexport const b = a;\nexport type B = number;\n");
  return { root, write, remove: () => fs.rmSync(root, { recursive: true, force: true }) };
}

describe('the floors (eslint-floors.js, from the READMEs)', function () {
  it('refuses a climb: the decision point into a door, the store into policy, the base into credentials', function () {
    expect(refused('api/decision/engine.ts', '../http/browser-session.js')).to.equal(true);
    expect(refused('api/decision/record.ts', '../ui/pages.js')).to.equal(true);
    expect(refused('api/store/decisions.ts', '../policy/evaluate.js')).to.equal(true);
    expect(refused('api/audit.ts', './credentials/closing.js')).to.equal(true);
    expect(refused('api/credentials/dpop/check.ts', '../../oauth/errors.js')).to.equal(true);
    expect(refused('api/db/embedded.ts', '../http/listen.js')).to.equal(true);
    // a climb of types is a climb
    expect(refused('api/store/sessions.ts', '../credentials/tokens.js', { types: true })).to.equal(true);
  });

  it('refuses a peer: oauth, decision and people import none of each other', function () {
    expect(refused('api/decision/engine.ts', '../oauth/openid.js')).to.equal(true);
    expect(refused('api/people/accounts.ts', '../oauth/authorization-request.js')).to.equal(true);
    expect(refused('api/oauth/grants/grant.ts', '../../people/attempts.js')).to.equal(true);
    expect(refused('api/oauth/interaction.ts', '../people/sign-in.js')).to.equal(true);
    expect(refused('api/saml/idp.ts', '../people/sign-in.js')).to.equal(true);
  });

  it('refuses the composition root below it, and operator/ and test/ anywhere in api/', function () {
    expect(refused('api/oauth/token-endpoint.ts', '../services.js')).to.equal(true);
    expect(refused('api/http/routes/sign-in.ts', '../../server.js')).to.equal(true);
    expect(refused('api/http/app.ts', '../services.js', { types: true })).to.equal(false);
    expect(refused('api/http/app.ts', '../services.js')).to.equal(true);
    expect(refused('api/store/users.ts', '../../operator/kube.js')).to.equal(true);
    expect(refused('api/server.ts', '../test/support/box.js')).to.equal(true);
  });

  it('puts mail between credentials and the peers: people and jobs send it, credentials and the store do not', function () {
    expect(refused('api/credentials/tokens.ts', '../mail/outbox.js')).to.equal(true);
    expect(refused('api/store/mail-outbox.ts', '../mail/templates.js')).to.equal(true);
    expect(refused('api/mail/outbox.ts', '../people/links.js')).to.equal(true);
    expect(refused('api/mail/outbox.ts', '../http/app.js')).to.equal(true);
    expect(refused('api/mail/messages.ts', '../credentials/tokens.js')).to.equal(false);
    expect(refused('api/mail/messages.ts', '../store/users.js')).to.equal(false);
    expect(refused('api/people/links.ts', '../mail/outbox.js')).to.equal(false);
    expect(refused('api/jobs/purge.ts', '../mail/outbox.js')).to.equal(false);
  });

  it('keeps the doors off the database: db/ types only, and store/ values only in the REST API of the resources', function () {
    // the pool, a transaction: never in a door (the readiness probe asks the root)
    expect(refused('api/http/routes/admin.ts', '../../db/pool.js')).to.equal(true);
    expect(refused('api/http/routes/health.ts', '../../db/migrate.js')).to.equal(true);
    expect(refused('api/grpc/ext-authz.ts', '../db/pool.js', { types: true })).to.equal(true);
    expect(refused('api/http/routes/admin.ts', '../../db/pool.js', { types: true })).to.equal(false);
    expect(refused('api/http/errors.ts', '../db/unavailable.js')).to.equal(false);
    // records: read and written by the floor that decides, but in the REST API of a resource
    expect(refused('api/http/routes/app-sign-in.ts', '../../store/users.js')).to.equal(true);
    expect(refused('api/ui/pages.ts', '../store/factors.js')).to.equal(true);
    expect(refused('api/http/routes/app-sign-in.ts', '../../store/users.js', { types: true })).to.equal(false);
    expect(refused('api/ui/account-page.ts', '../store/factors.js', { types: true })).to.equal(false);
    expect(refused('api/http/routes/resources.ts', '../../store/clients.js')).to.equal(false);
    expect(refused('api/http/routes/people.ts', '../../store/users.js')).to.equal(false);
    const [message] = floorMessages(
      'api/http/routes/app-sign-in.ts',
      "import { getUser } from '../../store/users.js';\nexport { getUser };\n",
    );
    expect(message).to.equal(
      'api/http/routes/app-sign-in.ts may import only the types of api/store/users.ts (import type): api/http/README.md says so',
    );
  });

  it('refuses a new folder until a README places it: its files, and every import of them', function () {
    const [own] = floorMessages('api/reports/weekly.ts', "import { errorMessage } from '../errors.js';\nexport { errorMessage };\n");
    expect(own).to.match(/^api\/reports\/ has no place among the floors: say what it may import in api\/reports\/README\.md/);
    expect(refused('api/http/routes/admin.ts', '../../reports/weekly.js')).to.equal(true);
    expect(refused('api/main.ts', './reports/weekly.js')).to.equal(true);
    // a new top folder of the repository's TypeScript, and a file at its root
    expect(floorMessages('tools/gen.ts', 'export const x = 1;\n')).to.have.length(1);
    expect(floorMessages('gen.ts', 'export const x = 1;\n')).to.have.length(1);
  });

  it('places a new folder by its README: then it may import what it names, and who names it may import it', function () {
    const { root, write, remove } = scratchRepository();
    // The lint reads the READMEs as it starts: each run below is a new one.
    const lint = (file: string, code: string): string[] => {
      const rule = floorsRule(root);
      const config: Linter.Config[] = [
        { files: ['**/*.ts'], plugins: { floors: { rules: { readme: rule } } }, rules: { 'floors/readme': 'error' } },
      ];
      return floorMessages(file, code, { root, config });
    };
    const report =
      "import { errorMessage } from '../errors.js';\nimport { users } from '../store/users.js';\nexport { errorMessage, users };\n";
    const refusals = (): string[] => lint('api/reports/weekly.ts', report);
    try {
      expect(refusals()).to.have.length(1); // the folder, once
      write('api/reports/README.md', 'Weekly reports.\n\nMay import: `store/` and the base (`*.ts`). Never a door.\n');
      expect(refusals()).to.deep.equal([]);
      write('api/reports/README.md', 'Weekly reports.\n\nMay import: the base (`*.ts`).\n');
      expect(refusals()).to.deep.equal([
        'api/reports/weekly.ts may not import api/store/users.ts: api/reports/README.md does not name it (api/README.md says how)',
      ]);
      // The root names every placed folder (`*/`); the store names none.
      expect(lint('api/main.ts', "import { x } from './reports/weekly.js';\nexport { x };\n")).to.deep.equal([]);
      expect(lint('api/store/users.ts', "import { x } from '../reports/weekly.js';\nexport { x };\n")).to.have.length(1);
    } finally {
      remove();
    }
  });

  it('lets the operator take of api/ only its public module, and the tests anything', function () {
    expect(refused('operator/controllers/box/tls.ts', '../../../api/http/tls.js')).to.equal(true);
    expect(refused('operator/controllers/identityprovider.ts', '../../api/people/upstream/secret.js')).to.equal(true);
    expect(refused('operator/events.ts', '../api/errors.js')).to.equal(true);
    expect(refused('operator/controllers/box/tls.ts', '../../../api/public.js')).to.equal(false);
    expect(refused('api/http/app.ts', '../public.js')).to.equal(true);
    expect(refused('test/unit/operator/boxdb.test.ts', '../../../api/db/pool.js')).to.equal(false);
    expect(refused('test/unit/operator/boxdb.test.ts', '../../../operator/boxdb.js')).to.equal(false);
  });

  it('lets each floor stand on the ones below it', function () {
    expect(refused('api/http/routes/authorization-endpoint.ts', '../../oauth/interaction.js')).to.equal(false);
    expect(refused('api/grpc/check.ts', '../http/refusal.js')).to.equal(false);
    expect(refused('api/decision/engine.ts', '../credentials/dpop/resource.js')).to.equal(false);
    expect(refused('api/credentials/closing.ts', '../store/sessions.js')).to.equal(false);
    expect(refused('api/store/sessions.ts', '../db/pool.js')).to.equal(false);
    expect(refused('api/cli/kube/loopback.ts', '../../credentials/pkce.js')).to.equal(false);
    expect(refused('api/types.ts', './schema/crd-types.js', { types: true })).to.equal(false);
    expect(refused('api/types.ts', './schema/crd-types.js')).to.equal(true);
  });

  it('takes a temporary exception while an import needs it, and asks for its removal once nothing does', function () {
    const exceptions = [['api/http/routes/openid.ts', 'api/store/users.ts']];
    const excepted = [{ ...floors[0], rules: { 'floors/readme': ['error', { exceptions }] as ['error', unknown] } }];
    const importing = "import { getUser } from '../../store/users.js';\nexport { getUser };\n";
    expect(floorMessages('api/http/routes/openid.ts', importing, { config: floors })).to.have.length(1);
    expect(floorMessages('api/http/routes/openid.ts', importing, { config: excepted })).to.deep.equal([]);
    expect(floorMessages('api/http/routes/openid.ts', 'export const x = 1;\n', { config: excepted })).to.deep.equal([
      'api/http/routes/openid.ts no longer imports api/store/users.ts: remove its exception (TEMPORARY, eslint.config.js)',
    ]);
  });

  it('reads READMEs that name what exists: every folder and file a "May import:" sentence names', function () {
    const missing = readmeRules(process.cwd()).flatMap((rule) =>
      [...(rule.files ?? []), ...rule.targets.map((t) => t.name)]
        .filter((name) => name !== '*/' && name !== '*.ts')
        .filter((name) => !fs.existsSync(path.join(rule.tree, name)))
        .map((name) => `${rule.readme}: ${name}`),
    );
    expect(missing).to.deep.equal([]);
  });
});

/** The messages of `floors/layers` for `code` as `file` of the repository at `root` (its other files read from disk). */
function layerMessages(root: string, file: string, code: string): string[] {
  const config: Linter.Config[] = [
    TYPESCRIPT,
    { files: ['**/*.ts'], plugins: { floors: { rules: { layers: layersRule(root) } } }, rules: { 'floors/layers': 'error' } },
  ];
  return new Linter({ cwd: root }).verify(code, config, path.join(root, file)).map((m) => m.message);
}

describe('the layers (eslint-floors.js floors/layers)', function () {
  it('reads the floors from the READMEs: the base lowest, then the store, the peers, the doors, the root', function () {
    const { floorOf, groups } = readFloors(process.cwd());
    const floor = (file: string): number => floorOf(file)!.floor;
    expect(floor('api/errors.ts')).to.equal(0);
    expect(floor('api/db/pool.ts')).to.be.below(floor('api/store/users.ts'));
    expect(floor('api/store/users.ts')).to.be.below(floor('api/credentials/sign-in.ts'));
    expect(floor('api/credentials/sign-in.ts')).to.be.below(floor('api/saml/idp.ts'));
    expect(floor('api/saml/idp.ts')).to.be.below(floor('api/people/accounts.ts'));
    expect(floor('api/people/accounts.ts')).to.be.below(floor('api/http/app.ts'));
    expect(floor('api/http/app.ts')).to.be.below(floor('api/services.ts'));
    expect(floor('api/services.ts')).to.be.below(floor('operator/main.ts'));
    // Folders whose sentences name each other stand on one floor: these, and no others.
    expect(groups.map((group) => [...group].sort())).to.deep.equal([
      ['api/host/', 'api/main.ts, api/server.ts, api/services.ts, api/bootstrap.ts, api/notice-kinds.ts'],
      ['api/db/', 'api/docs/', 'api/kube/', 'api/schema/'],
    ]);
  });

  it('refuses an import of values a README lets climb, and more climbs of types than MAX_CLIMBS', function () {
    const { root, write, remove } = scratchRepository();
    try {
      expect(layerMessages(root, 'api/store/a.ts', "import { b } from '../people/b.js';\nexport const a = b;\n")).to.deep.equal([
        'api/store/a.ts imports api/people/b.ts, which stands no lower than it (api/store/ stands on floor 0, api/people/ on floor 1): move what it takes down, or hand it in from above; only `import type` may climb (api/README.md)',
      ]);
      const types = "import type { B } from '../people/b.js';\nexport type A = B;\n";
      expect(layerMessages(root, 'api/store/a.ts', types)).to.deep.equal([]);
      const climbers = Array.from({ length: MAX_CLIMBS + 1 }, (_, i) => `api/store/c${i}.ts`);
      for (const file of climbers) write(file, types);
      const [message] = layerMessages(root, 'api/store/c0.ts', types);
      expect(message).to.include(`${MAX_CLIMBS + 1} imports climb where ${MAX_CLIMBS} may (api/store/c0.ts → api/people/b.ts, `);
    } finally {
      remove();
    }
  });

  it('refuses every import circle, naming its way back', function () {
    const { root, write, remove } = scratchRepository();
    try {
      write('api/store/x.ts', "import { y } from './y.js';\nexport const x = y;\n");
      write('api/store/y.ts', "import { z } from './z.js';\nexport const y = z;\n");
      write('api/store/z.ts', "import type { X } from './x.js';\nexport const z = 1;\nexport type Z = X;\n");
      expect(layerMessages(root, 'api/store/x.ts', "import { y } from './y.js';\nexport const x = y;\n")).to.deep.equal([
        'api/store/x.ts imports api/store/y.ts, which imports it back (api/store/y.ts → api/store/z.ts → api/store/x.ts): an import circle; break it (api/README.md)',
      ]);
      write('api/store/z.ts', 'export const z = 1;\n');
      expect(layerMessages(root, 'api/store/x.ts', "import { y } from './y.js';\nexport const x = y;\n")).to.deep.equal([]);
    } finally {
      remove();
    }
  });

  it('finds a circle of two files, and of three', function () {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['a.ts', 'c.ts']],
      ['c.ts', ['d.ts']],
      ['d.ts', ['e.ts']],
      ['e.ts', ['c.ts']],
      ['f.ts', ['a.ts']],
    ]);
    expect(circles(graph)).to.deep.equal([
      ['a.ts', 'b.ts'],
      ['c.ts', 'd.ts', 'e.ts'],
    ]);
  });

  it('finds none in api/ and operator/', function () {
    expect(circles(importGraph(process.cwd()))).to.deep.equal([]);
  });
});
