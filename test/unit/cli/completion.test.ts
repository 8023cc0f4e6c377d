// boxauth completion bash, loaded into a real bash: what it offers for a few command lines,
// as the shell asks (COMP_WORDS, COMP_CWORD, then the function `complete` names).
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { bashCompletion, zshCompletion } from '../../../api/cli/completion.js';
import { commands } from '../../../api/cli/program.js';

const script = (): string => bashCompletion(commands().map((c) => c.spec));

/** What bash completes for `line` (its last word the one being completed), one word a line. */
function completions(line: string): string[] {
  const words = line.split(' ');
  const program = `${script()}
COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')})
COMP_CWORD=${words.length - 1}
COMP_LINE='${line}'
_boxauth
printf '%s\\n' "\${COMPREPLY[@]}"
[[ "$(complete -p boxauth)" == *"-F _boxauth"* ]] || echo "not registered"`;
  const run = spawnSync('bash', ['--norc', '--noprofile', '-c', program], { encoding: 'utf8' });
  expect(run.status, run.stderr).to.equal(0);
  expect(run.stderr).to.equal('');
  return run.stdout.split('\n').filter(Boolean);
}

describe('boxauth completion', function () {
  it('bash: completes commands, then their subcommands', function () {
    expect(completions('boxauth us')).to.deep.equal(['user', 'users']);
    expect(completions('boxauth ')).to.include.members(['user', 'client', 'session', 'completion', 'version', '--help']);
    expect(completions('boxauth client ')).to.deep.equal(['list', 'get', 'describe', 'create', 'apply', 'edit', 'delete']);
    expect(completions('boxauth sessions d')).to.deep.equal(['describe', 'delete']);
    expect(completions('boxauth completion ')).to.deep.equal(['bash', 'zsh']);
  });

  it("bash: completes a subcommand's options only, and the values of -o", function () {
    expect(completions('boxauth user list -')).to.deep.equal(['--output', '-o', '--help']);
    expect(completions('boxauth user new --g')).to.deep.equal(['--group']);
    expect(completions('boxauth client get x -o ')).to.deep.equal(['table', 'json', 'yaml']);
    expect(completions('boxauth group new ops --require-second-factor ')).to.deep.equal(['true', 'false']);
    // An option's value is not read as the subcommand.
    expect(completions('boxauth user -o json ')).to.include('list');
  });

  it('zsh: the same functions, through bashcompinit', function () {
    const zsh = zshCompletion(commands().map((c) => c.spec));
    expect(zsh).to.match(/^#compdef boxauth\n/);
    expect(zsh).to.include('bashcompinit').and.include(script());
  });
});
