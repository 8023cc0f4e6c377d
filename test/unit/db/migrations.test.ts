// The expand/contract rule over api/db/migrations/: during a rolling update the previous release
// (scripts/previous-release) serves the schema this release's migrations made, so what a new
// migration does must not break it (docs/operations/upgrades.md). This reads the SQL as text
// (test/support/migration-rules.ts) and git for what the previous release shipped: an early
// warning with a message that says what to do. The proof is test/integration/rolling-upgrade.test.ts,
// which runs the previous release on the new schema.
//
// What a text check sees: DROP (tables, columns, indexes, constraints, defaults, NOT NULL,
// triggers, functions…), TRUNCATE, RENAME, ALTER COLUMN … TYPE, SET NOT NULL, a new NOT NULL column
// without a DEFAULT, new CHECK/EXCLUDE constraints and unique, primary or foreign keys over columns
// that were there before, triggers turned on or off, CREATE OR REPLACE / ALTER of functions, views and
// triggers (a trigger function makes the change feed's NOTIFY payload), a new column filled by an
// UPDATE for the existing rows while the previous release's rows would leave it NULL (what
// 012_app_audience.sql did: Apps an old pod wrote during the update held no audience and decided
// nothing), a new column on a table the previous release reads with a prepared `SELECT *` (every
// such statement then fails on its connections, as 014_dpop.sql did to the release before it), a
// shipped migration edited or removed, and a new one sorting before a shipped one. A CHECK
// dropped and added again under its name passes when it is proved to only widen the one before
// (`col IN (…)` or `col = ANY (ARRAY[…])`, every value kept), read from the earlier migrations.
// What it cannot see: what the code does with the schema — a column the new code requires and
// the old code never writes, unless the migration backfills it (017_email_key.sql: people an old
// pod adds have no key until a new pod starts); a new meaning for an old value; a new payload on
// the change feed built by code; SQL run by EXECUTE or built as a string; a DEFAULT the old code
// would not have chosen. The cross-version test covers those.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { projectPath } from '../../../api/paths.js';
import {
  checkMigration,
  checksAfter,
  preparedStarTables,
  statements,
  type Finding,
  type PreviousRelease,
} from '../../support/migration-rules.js';

const MIGRATIONS = 'api/db/migrations';

const git = (args: string[], input?: string): Buffer =>
  execFileSync('git', args, { cwd: projectPath(), maxBuffer: 256 << 20, ...(input !== undefined ? { input } : {}) });

/** The commit of scripts/previous-release; a clear error when this clone lacks it. */
function previousCommit(): string {
  const wanted = fs
    .readFileSync(projectPath('scripts', 'previous-release'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .find((l) => l && !l.startsWith('#'))!;
  try {
    return git(['rev-parse', '--verify', '--quiet', `${wanted}^{commit}`])
      .toString()
      .trim();
  } catch {
    throw new Error(
      `the previous release ${wanted} (scripts/previous-release) is not in this clone: a shallow clone? git fetch --unshallow`,
    );
  }
}

/** The text of each file under `dir` at `commit` ending in `ext` (one git cat-file for all). */
function filesAt(commit: string, dir: string, ext: string): Map<string, string> {
  const paths = git(['ls-tree', '-r', '--name-only', commit, '--', dir])
    .toString()
    .split('\n')
    .filter((p) => p.endsWith(ext));
  const out = git(['cat-file', '--batch'], paths.map((p) => `${commit}:${p}\n`).join(''));
  const files = new Map<string, string>();
  let at = 0;
  for (const p of paths) {
    const header = out.subarray(at, out.indexOf(10, at)).toString();
    const size = Number(header.split(' ')[2]);
    const start = out.indexOf(10, at) + 1;
    files.set(p, out.subarray(start, start + size).toString('utf8'));
    at = start + size + 1;
  }
  return files;
}

function filesHere(dir: string, ext: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const entry of fs.readdirSync(projectPath(dir), { recursive: true, withFileTypes: true })) {
    const file = path.join(entry.parentPath, entry.name);
    if (entry.isFile() && entry.name.endsWith(ext)) files.set(path.relative(projectPath(), file), fs.readFileSync(file, 'utf8'));
  }
  return files;
}

function releaseAt(commit: string): PreviousRelease {
  return {
    tablesReadWithStar: preparedStarTables(filesAt(commit, 'api', '.ts')),
    isAtOrBefore: (release) => {
      try {
        git(['merge-base', '--is-ancestor', `${release}^{commit}`, commit], '');
        return true;
      } catch {
        return false;
      }
    },
  };
}

const report = (findings: Finding[]): string =>
  findings.map((f) => `${f.file}:${f.line}: ${f.rule}: ${f.message}`).join('\n') +
  '\n(a migration must keep the previous release working while both run: expand now, contract a release later; docs/operations/upgrades.md)';

/** The code of a migration without its comments and spacing: what running it does. */
const meaning = (sql: string): string =>
  statements(sql)
    .map((s) => s.code.replace(/\s+/g, ' '))
    .join(';\n');

describe('migrations and the release before (expand, then contract)', function () {
  const previous = previousCommit();
  const shipped = filesAt(previous, MIGRATIONS, '.sql');
  const here = filesHere(MIGRATIONS, '.sql');
  const added = [...here.keys()].filter((p) => !shipped.has(p)).sort();

  it('every migration added since the previous release keeps it working', function () {
    const release = releaseAt(previous);
    const before = (p: string): string[] =>
      [...here.keys()]
        .filter((q) => q < p)
        .sort()
        .map((q) => here.get(q)!);
    const findings = added.flatMap((p) => checkMigration(path.basename(p), here.get(p)!, release, checksAfter(before(p))));
    expect(findings, report(findings)).to.deep.equal([]);
  });

  it('the migrations the previous release shipped are here unchanged, and new ones sort after them', function () {
    for (const [p, sql] of shipped) {
      expect(here.has(p), `${p} is gone: databases the previous release migrated hold it as applied`).to.equal(true);
      expect(meaning(here.get(p)!), `${p} was edited: databases that applied it keep what it was; add a new migration`).to.equal(
        meaning(sql),
      );
    }
    const last = [...shipped.keys()].sort().at(-1)!;
    for (const p of added)
      expect(p > last, `${p} sorts before ${last}: databases made by the previous release would apply it last`).to.equal(true);
  });

  it("this release's prepared statements name their columns, so that the next release may add one", function () {
    const star = preparedStarTables(filesHere('api', '.ts'));
    expect(Object.fromEntries(star), 'prepared statements whose result is * (name the columns)').to.deep.equal({});
  });

  it('catches what broke rolling updates before: 012 (a backfilled column) and 014 (a column under a prepared SELECT *)', function () {
    // 012 against the release before it, d443817 (61dc121^); 014 against the same release, which read sessions with SELECT *.
    const before012 = releaseAt('61dc121^');
    const at = (name: string): string => git(['show', `61dc121:${MIGRATIONS}/${name}`]).toString();
    // It also read apps with a prepared SELECT * (read-${this.table}): the new column broke those reads too.
    expect(checkMigration('012_app_audience.sql', at('012_app_audience.sql'), before012).map((f) => f.rule)).to.deep.equal([
      'prepared-star',
      'backfill',
    ]);
    expect(before012.tablesReadWithStar.get('sessions')).to.include('session-by-id');
    const dpop = here.get(`${MIGRATIONS}/014_dpop.sql`)!;
    expect(checkMigration('014_dpop.sql', dpop, before012).map((f) => f.rule)).to.deep.equal(['prepared-star']);
  });
});

describe('the expand/contract rule, statement by statement', function () {
  const previous: PreviousRelease = { tablesReadWithStar: new Map([['sessions', ['session-by-id']]]), isAtOrBefore: (r) => r === 'v1.0.0' };
  const rules = (sql: string): string[] => checkMigration('x.sql', sql, previous).map((f) => f.rule);

  it('refuses what breaks the previous release while both run', function () {
    const refused: [string, string][] = [
      ['DROP TABLE consents', 'drop'],
      ['ALTER TABLE users DROP COLUMN status', 'drop'],
      ['ALTER TABLE users DROP status', 'drop'],
      ['DROP INDEX users_email', 'drop'],
      ['ALTER TABLE consents DROP CONSTRAINT consents_client_fk', 'drop'],
      ['ALTER TABLE users ALTER COLUMN status DROP DEFAULT', 'drop'],
      ['ALTER TABLE users ALTER COLUMN status DROP NOT NULL', 'drop'],
      ['DROP TRIGGER users_notify ON users', 'drop'],
      ['TRUNCATE sign_in_failures', 'drop'],
      ['ALTER TABLE users RENAME COLUMN status TO state', 'rename'],
      ['ALTER TABLE users RENAME TO people', 'rename'],
      ['ALTER INDEX users_email RENAME TO users_mail', 'rename'],
      ['ALTER TABLE users ALTER COLUMN data TYPE jsonb USING data::jsonb', 'column-type'],
      ['ALTER TABLE users ALTER data SET DATA TYPE jsonb', 'column-type'],
      ['ALTER TABLE users ALTER COLUMN status SET NOT NULL', 'not-null'],
      ['ALTER TABLE users ADD COLUMN locale text NOT NULL', 'not-null'],
      ["ALTER TABLE users ADD CONSTRAINT users_status CHECK (status IN ('a', 'b'))", 'constraint'],
      ['ALTER TABLE users ADD UNIQUE (status)', 'constraint'],
      ['ALTER TABLE consents ADD CONSTRAINT c_fk FOREIGN KEY (client_id) REFERENCES clients', 'constraint'],
      ['CREATE UNIQUE INDEX users_data ON users (data)', 'constraint'],
      ['ALTER TABLE users DISABLE TRIGGER users_notify', 'trigger'],
      [
        "CREATE OR REPLACE FUNCTION boxauth_notify() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_notify('boxauth', '{}'); RETURN NULL; END $$",
        'replace',
      ],
      ['ALTER TABLE users ADD COLUMN nick text; UPDATE users SET nick = email', 'backfill'],
      ['ALTER TABLE sessions ADD COLUMN acr text', 'prepared-star'],
    ];
    for (const [sql, rule] of refused) expect(rules(sql), sql).to.include(rule);
  });

  it('lets through what the previous release does not notice', function () {
    const allowed = [
      "CREATE TABLE notes (id bigserial PRIMARY KEY, body text NOT NULL, CHECK (body <> ''))",
      'CREATE TABLE notes (id int); ALTER TABLE notes DROP COLUMN id; ALTER TABLE notes ADD COLUMN x text NOT NULL',
      'ALTER TABLE users ADD COLUMN locale text',
      "ALTER TABLE users ADD COLUMN locale text NOT NULL DEFAULT 'en'",
      'ALTER TABLE users ADD COLUMN nick text, ADD COLUMN nick_key text UNIQUE',
      'ALTER TABLE users ADD COLUMN nick_key text; CREATE UNIQUE INDEX users_nick_key ON users (nick_key)',
      'CREATE INDEX users_status ON users (status)',
      "ALTER TABLE users ALTER COLUMN status SET DEFAULT 'x'",
      "UPDATE users SET status = 'drop table' WHERE status IS NULL", // data, not schema; a literal is not code
      '-- DROP TABLE users is what a later release does\nSELECT 1',
      'CREATE TRIGGER notes_notify AFTER INSERT ON users FOR EACH ROW EXECUTE FUNCTION boxauth_notify()',
      // A backfilled column that a trigger derives for every write, the previous release's included.
      'ALTER TABLE users ADD COLUMN nick text; UPDATE users SET nick = email; CREATE TRIGGER users_nick BEFORE INSERT OR UPDATE ON users FOR EACH ROW EXECUTE FUNCTION users_nick()',
      "ALTER TABLE users ADD COLUMN nick text;\n-- backfill: users the previous release adds get theirs at this release's next start\nUPDATE users SET nick = email",
      'ALTER TABLE clients ADD COLUMN note text', // not read with * by the previous release
      // A trigger function replaced, saying how the previous release still hears what it parses.
      "-- replace: the same payload, on the same channel while the previous release listens\nCREATE OR REPLACE FUNCTION boxauth_notify() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_notify('boxauth', '{}'); RETURN NULL; END $$",
    ];
    for (const sql of allowed) expect(rules(sql), sql).to.deep.equal([]);
  });

  it('takes a contraction marked as unused since the previous release or one before it, and no later one', function () {
    expect(rules('-- contract: users.status, unused since v1.0.0\nALTER TABLE users DROP COLUMN status')).to.deep.equal([]);
    expect(rules('-- contract: users.status, unused since v1.1.0\nALTER TABLE users DROP COLUMN status')).to.deep.equal(['marker']);
    expect(rules('-- users.status is unused now\nALTER TABLE users DROP COLUMN status')).to.deep.equal(['drop']);
    expect(rules('-- contract: sessions, unused since v1.0.0\nALTER TABLE sessions ADD COLUMN acr text')).to.deep.equal(['prepared-star']);
  });

  describe('a CHECK replaced under its name', function () {
    // As 019_factors.sql made it: PostgreSQL names a column's CHECK <table>_<column>_check.
    const schema = checksAfter([
      "CREATE TABLE factors (id bigserial PRIMARY KEY, kind text NOT NULL CHECK (kind IN ('passkey', 'totp')), CHECK (kind <> 'totp' OR id > 0))",
    ]);
    const replace = (check: string): Finding[] =>
      checkMigration(
        'x.sql',
        `ALTER TABLE factors DROP CONSTRAINT factors_kind_check, ADD CONSTRAINT factors_kind_check CHECK (${check})`,
        previous,
        schema,
      );

    it('takes one that only widens: every value allowed before still is', function () {
      expect(replace("kind IN ('passkey', 'totp', 'email_code')")).to.deep.equal([]);
      expect(replace("kind = ANY (ARRAY['totp'::text, 'passkey'::text, 'email_code'::text])"), 'as pg_dump writes it').to.deep.equal([]);
      const apart =
        "ALTER TABLE factors DROP CONSTRAINT factors_kind_check;\nALTER TABLE factors ADD CONSTRAINT factors_kind_check CHECK (kind IN ('passkey', 'totp', 'x'))";
      expect(checkMigration('x.sql', apart, previous, schema), 'in two statements').to.deep.equal([]);
    });

    it('refuses one that narrows, naming the constraint and both expressions', function () {
      const findings = replace("kind IN ('passkey', 'email_code')");
      expect(findings.map((f) => f.rule)).to.deep.equal(['constraint']);
      expect(findings[0]!.message).to.contain(
        "CHECK factors_kind_check on factors replaced by one not proved to only widen it (before: kind IN ('passkey', 'totp'); now: kind IN ('passkey', 'email_code'))",
      );
    });

    it('refuses what it cannot prove: another shape, another column, a constraint it does not know', function () {
      for (const check of ["kind IN ('passkey', 'totp') OR kind LIKE 'x%'", "name IN ('passkey', 'totp', 'x')", "kind <> ''"])
        expect(
          replace(check).map((f) => f.rule),
          check,
        ).to.deep.equal(['constraint']);
      const unknown = checkMigration(
        'x.sql',
        "ALTER TABLE factors DROP CONSTRAINT factors_kinds, ADD CONSTRAINT factors_kinds CHECK (kind IN ('passkey', 'totp'))",
        previous,
        schema,
      );
      expect(unknown.map((f) => f.message)).to.deep.equal([
        'CHECK factors_kinds on factors: no such constraint before this migration, so what it held cannot be compared (a name PostgreSQL chose is <table>_<column>_check)',
      ]);
    });

    it("reads a schema's CHECKs with PostgreSQL's names, as ALTER TABLE changes them", function () {
      expect(Object.fromEntries(schema)).to.deep.equal({
        'factors.factors_kind_check': "kind IN ('passkey', 'totp')",
        'factors.factors_check': "kind <> 'totp' OR id > 0",
      });
      const later = checksAfter([
        "CREATE TABLE factors (kind text CHECK (kind IN ('a')))",
        "ALTER TABLE factors DROP CONSTRAINT factors_kind_check, ADD CONSTRAINT factors_kind_check CHECK (kind IN ('a', 'b'))",
      ]);
      expect(Object.fromEntries(later)).to.deep.equal({ 'factors.factors_kind_check': "kind IN ('a', 'b')" });
    });
  });

  it('splits statements as PostgreSQL does: semicolons in literals, identifiers and bodies are not ends', function () {
    const sql = `-- a\nSELECT ';', "a;b", E'\\';' /* ; */;\nCREATE FUNCTION f() RETURNS int LANGUAGE sql AS $body$ SELECT 1; $body$;\n\nSELECT $1`;
    expect(statements(sql).map((s) => [s.line, s.code, s.comments])).to.deep.equal([
      [2, `SELECT '', "a;b", ''`, ['a', ';']],
      [3, 'CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $body$ SELECT 1; $body$', []],
      [5, 'SELECT $1', []],
    ]);
  });
});
