// How the CLI prints lists: what a person reads at a terminal, and what a program parses.
import { expect } from 'chai';
import { CliError } from '../../../api/cli/api.js';
import type { Io } from '../../../api/cli/command.js';
import { parse } from 'yaml';
import { outputFormat, printList, printable, printed, table } from '../../../api/cli/output.js';

const io = (terminal: boolean): Io => ({
  out: () => undefined,
  err: () => undefined,
  prompter: () => {
    throw new Error('no prompts here');
  },
  env: {},
  cwd: '/work',
  terminal,
});

describe('boxauth --output', function () {
  it('is a table on a terminal and JSON on a pipe unless --output names one; anything else is a usage error', function () {
    expect(outputFormat({}, io(true))).to.equal('table');
    expect(outputFormat({}, io(false))).to.equal('json');
    expect(outputFormat({ output: 'yaml' }, io(true))).to.equal('yaml');
    let refused: unknown;
    try {
      outputFormat({ output: 'xml' }, io(true));
    } catch (err) {
      refused = err;
    }
    expect(refused).to.be.instanceOf(CliError);
    expect((refused as CliError).exitCode).to.equal(2);
  });

  it('pads columns to their widest cell, joins lists with commas, and ends no line in spaces', function () {
    const rows = [
      { id: 1, name: 'ann@example.com', groups: ['admins', 'editors'], note: null },
      { id: 22, name: 'b', groups: [], note: 'x' },
    ];
    const text = table(rows, [
      { header: 'ID', cell: (r) => r.id },
      { header: 'EMAIL', cell: (r) => r.name },
      { header: 'GROUPS', cell: (r) => r.groups },
      { header: 'NOTE', cell: (r) => r.note },
    ]);
    expect(text).to.equal(
      [
        'ID  EMAIL            GROUPS          NOTE',
        '1   ann@example.com  admins,editors',
        '22  b                                x',
        '',
      ].join('\n'),
    );
  });

  it('shows control characters escaped: a description cannot rewrite the terminal', function () {
    expect(printable('red\u001b[31m\nnext\u0007\u009b')).to.equal('red\\u001b[31m\\nnext\\u0007\\u009b');
    expect(table([{ d: 'a\u001b]0;title\u0007' }], [{ header: 'D', cell: (r) => r.d }])).not.to.match(/[\u0000-\u0009\u000b-\u001f]/);
  });

  it('shows bidi controls escaped: a name cannot make its line read in another order', function () {
    expect(printable('ann\u202Emoc.elpmaxe\u202C\u2066x\u2069\u200F\u061C')).to.equal(
      'ann\\u202emoc.elpmaxe\\u202c\\u2066x\\u2069\\u200f\\u061c',
    );
    expect(printable('Élodie 東京 🚀')).to.equal('Élodie 東京 🚀');
  });

  it('printed escapes every value put in a line, and only those', function () {
    const email = 'a\u001b[2J\u202E@example.com';
    expect(printed`Deleted user ${email} (id ${7}).\n`).to.equal('Deleted user a\\u001b[2J\\u202e@example.com (id 7).\n');
  });

  it('JSON and YAML hold no raw C1 or bidi control (a terminal acts on them), and say the same to a program', function () {
    // \u009b is an 8-bit CSI (ESC [); \u202e and \u2066 reorder the line. JSON.stringify and yaml leave them raw.
    const records = [{ name: 'x\u009b2Jy\u202eevil\u2066z', 'key\u200f': 1, plain: 'abc' }];
    for (const format of ['json', 'yaml'] as const) {
      let text = '';
      printList({ ...io(true), out: (t: string) => void (text += t) }, format, records, []);
      expect(text, format).not.to.match(/[\u0080-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/);
      expect(format === 'json' ? JSON.parse(text) : parse(text), format).to.deep.equal(records);
    }
  });
});
