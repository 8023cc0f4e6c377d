// docs/guides/email.md is where an administrator learns which mails the box sends and what their
// templates may name; api/mail/kinds.ts is what the box sends and what its templates are checked
// against. Each of the page's two tables must list exactly the declared kinds, the second with
// exactly their placeholders, or a template written from the page stops the box at start.
import { expect } from 'chai';
import fs from 'node:fs';
import { MAIL_KINDS, PLACEHOLDERS, type MailKind } from '../../../api/mail/kinds.js';
import { projectPath } from '../../../api/paths.js';
import { backquoted, pageTables } from '../../support/page-tables.js';

const PAGE = 'docs/guides/email.md';

/** The page's table whose header is `header`, its rows without the header. */
function table(header: string): string[][] {
  const found = pageTables(PAGE).filter(([head]) => head!.join('|') === header);
  expect(found, `${PAGE}: one table with the header ${header}`).to.have.length(1);
  return found[0]!.slice(1);
}

/** The placeholders of a cell, by name: `{{box}} (…), {{email}}` → box, email. */
const placeholdersOf = (cell: string): string[] =>
  backquoted(cell).map((name) => /^\{\{(\w+)\}\}$/.exec(name)?.[1] ?? `not a placeholder: ${name}`);

/** What is wrong with the kinds a table's rows name: a kind named twice, one not declared, one missing. */
function kindProblems(what: string, rows: string[][]): string[] {
  const named = rows.flatMap(([kinds]) => backquoted(kinds!));
  return [
    ...named.filter((kind, i) => named.indexOf(kind) !== i).map((kind) => `${what}: \`${kind}\` has two rows`),
    ...named
      .filter((kind) => !(MAIL_KINDS as readonly string[]).includes(kind))
      .map((kind) => `${what}: \`${kind}\` is no kind of api/mail/kinds.ts`),
    ...MAIL_KINDS.filter((kind) => !named.includes(kind)).map((kind) => `${what}: \`${kind}\` has no row`),
  ];
}

describe('mail kinds', function () {
  it(`${PAGE} lists every kind of mail api/mail/kinds.ts declares, and no other, in “What mails the box sends”`, function () {
    expect(kindProblems('the table of mails', table('kind|asked for by|sent to|says'))).to.deep.equal([]);
  });

  it(`${PAGE} gives each kind the placeholders api/mail/kinds.ts declares, and no other`, function () {
    const rows = table('kind|placeholders');
    // The placeholders every kind has are said once, below the table.
    const page = fs.readFileSync(projectPath(...PAGE.split('/')), 'utf8');
    const everyKind = /Every kind also has ((?:`\{\{\w+\}\}`(?:, | and )?)+)/.exec(page);
    expect(everyKind, `${PAGE}: “Every kind also has {{…}}”`).to.not.equal(null);
    const shared = placeholdersOf(everyKind![1]!);
    const problems = kindProblems('the table of placeholders', rows);
    for (const [kinds, cell] of rows) {
      const documented = [...placeholdersOf(cell!), ...shared].sort().join(', ');
      for (const kind of backquoted(kinds!).filter((k): k is MailKind => Object.hasOwn(PLACEHOLDERS, k))) {
        const declared = [...PLACEHOLDERS[kind]].sort().join(', ');
        if (documented !== declared)
          problems.push(
            `the table of placeholders, row \`${kind}\`: the page says {{${documented}}}, api/mail/kinds.ts declares {{${declared}}}`,
          );
      }
    }
    expect(problems).to.deep.equal([]);
  });
});
