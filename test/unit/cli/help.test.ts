// Every help text of boxauth, checked as a reader would: its columns aligned, no line wider
// than the terminal's 100 columns, and every word one the project knows (help-words.txt), so a
// typo ("AccessPolicys", "how the list print") fails here before anyone reads it.
import { expect } from 'chai';
import fs from 'node:fs';
import { commandHelp, HELP_WIDTH } from '../../../api/cli/command.js';
import { commands, help } from '../../../api/cli/program.js';
import { projectPath } from '../../../api/paths.js';

const texts = (): [string, string][] => [
  ['boxauth', help()],
  ...commands().map((c): [string, string] => [c.spec.name, commandHelp(c.spec)]),
];

/** The description column of each two-column section (Commands, Subcommands, Options), and the lines that break it. */
export function misaligned(text: string): string[] {
  const problems: string[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (!/^(Commands|Subcommands|Options|Filters):$/.test(lines[i]!)) continue;
    const columns = new Set<number>();
    let j = i + 1;
    for (; j < lines.length && lines[j] !== ''; j++) {
      const line = lines[j]!;
      const entry = /^ {2}(\S(?:.*?\S)?)( {2,})\S/.exec(line);
      if (entry) columns.add(2 + entry[1]!.length + entry[2]!.length);
      else if (/^ {2}\S/.test(line))
        continue; // a term alone: its description is on the next line
      else columns.add(line.length - line.trimStart().length);
    }
    if (columns.size > 1) problems.push(`${lines[i]} (line ${i + 1}): descriptions start at columns ${[...columns].join(', ')}`);
    i = j;
  }
  return problems;
}

/** The words of a text, lower case: letters only, as a dictionary lists them. */
function words(text: string): string[] {
  return [...new Set(text.toLowerCase().match(/[a-z]+/g) ?? [])];
}

const known = new Set(
  fs
    .readFileSync(projectPath('test', 'unit', 'cli', 'help-words.txt'), 'utf8')
    .split('\n')
    .filter((line) => line && !line.startsWith('#')),
);

describe('boxauth help texts', function () {
  it('align their columns: every description of a section starts at one column', function () {
    for (const [name, text] of texts()) expect(misaligned(text), name).to.deep.equal([]);
  });

  it('the alignment check catches a description out of line', function () {
    expect(misaligned('Options:\n  -a      one\n  --bb  two\n')).to.have.length(1);
    expect(misaligned('Options:\n  -a    one\n        more\n  --long-option-alone\n        its text\n')).to.deep.equal([]);
  });

  it(`fit in ${HELP_WIDTH} columns and end no line in a space`, function () {
    for (const [name, text] of texts())
      for (const line of text.split('\n')) {
        expect(line.length, `${name}: ${line}`).to.be.at.most(HELP_WIDTH);
        expect(line, name).not.to.match(/ $/);
      }
  });

  it('hold no word the project does not know (a typo; a new word goes into help-words.txt)', function () {
    for (const [name, text] of texts()) {
      const unknown = words(text).filter((word) => !known.has(word));
      expect(unknown, `${name}: unknown words (typos?)`).to.deep.equal([]);
    }
  });

  it('hold none of the typos of issue 52', function () {
    for (const [name, text] of texts()) {
      expect(text, name).not.to.include('AccessPolicys');
      expect(text, name).not.to.match(/how (the )?\w+ print\b/);
    }
    expect(known.has('policys')).to.equal(false);
  });

  it('name every command once, with its aliases said in its own help', function () {
    const names = commands().flatMap((c) => [c.spec.name, ...(c.spec.aliases ?? [])]);
    expect(new Set(names).size).to.equal(names.length);
    expect(names).not.to.include('sessions-list');
    for (const c of commands()) for (const alias of c.spec.aliases ?? []) expect(commandHelp(c.spec)).to.include(`boxauth ${alias}`);
  });
});
