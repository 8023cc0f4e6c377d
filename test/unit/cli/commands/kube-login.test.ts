// boxauth kube-login's options, as a person typing them sees them refused.
import { expect } from 'chai';
import { CliError } from '../../../../api/cli/api.js';
import { commandHelp, readCommand, type Io } from '../../../../api/cli/command.js';
import { kubeLoginCommand } from '../../../../api/cli/commands/kube-login.js';

async function run(args: string[]): Promise<{ out: string; err: string }> {
  let out = '';
  let err = '';
  const io: Io = {
    out: (text) => (out += text),
    err: (text) => (err += text),
    prompter: () => {
      throw new Error('no prompts here');
    },
    env: {},
    cwd: '/work',
  };
  const given = readCommand(kubeLoginCommand.spec, args);
  if (given === 'help') io.out(commandHelp(kubeLoginCommand.spec));
  else await kubeLoginCommand.run(given, io);
  return { out, err };
}

async function refusal(args: string[]): Promise<CliError> {
  try {
    await run(args);
  } catch (err) {
    expect(err).to.be.instanceOf(CliError);
    return err as CliError;
  }
  throw new Error(`accepted: ${args.join(' ')}`);
}

describe('boxauth kube-login', function () {
  const box = ['--box', 'https://auth.example', '--client', 'kubectl'];

  it('setup writes the options it passes on into the kubeconfig, paths made absolute', async function () {
    const { out } = await run(['setup', ...box, '--timeout', '60', '--listen-port', '8000', '--cache-dir', 'c', '--only', 'user']);
    expect(out).to.include('--timeout=60').and.include('--listen-port=8000').and.include('--cache-dir=/work/c');
  });

  it('setup refuses a --timeout or --listen-port the plugin would refuse at every kubectl run', async function () {
    for (const [flag, value] of [
      ['--timeout', 'soon'],
      ['--timeout', '0'],
      ['--listen-port', '70000'],
      ['--listen-port', '-1'],
    ] as const) {
      const err = await refusal(['setup', ...box, `${flag}=${value}`]);
      expect(err.exitCode, `${flag} ${value}`).to.equal(2);
      expect(err.message).to.include(flag);
    }
  });

  it('refuses what it cannot use, with the exit code of a wrong command', async function () {
    expect((await refusal(['--client', 'kubectl'])).message).to.include('--box');
    expect((await refusal(['--box', 'ftp://x', '--client', 'kubectl'])).message).to.include('http(s)');
    expect((await refusal(['--box', 'https://auth.example'])).message).to.include('--client');
    expect((await refusal([...box, '--scope', 'email'])).message).to.include('openid');
    expect((await refusal([...box, '--name', 'ann'])).message).to.include('options of setup');
    expect((await refusal(['setup', ...box, '--only', 'all'])).message).to.include('--only');
    expect((await refusal(['login', ...box])).exitCode).to.equal(2);
  });

  it('--help prints the options', async function () {
    const { out } = await run(['--help']);
    expect(out).to.include('--listen-port').and.include('--timeout').and.include('setup');
  });
});
