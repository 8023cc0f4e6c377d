// How every boxauth command reads its arguments (api/cli/command.ts readCommand): an unknown
// option, an option its subcommand does not take, and an argument too many or too few are usage
// errors (exit 2) that name them; nothing is run.
import { expect } from 'chai';
import { CliError } from '../../../api/cli/api.js';
import { readCommand, type Io } from '../../../api/cli/command.js';
import { commands, main } from '../../../api/cli/program.js';

function command(name: string) {
  const found = commands().find((c) => c.spec.name === name);
  if (!found) throw new Error(`no command ${name}`);
  return found.spec;
}

function refusal(name: string, args: string[]): CliError {
  try {
    readCommand(command(name), args);
  } catch (err) {
    expect(err).to.be.instanceOf(CliError);
    expect((err as CliError).exitCode).to.equal(2);
    return err as CliError;
  }
  throw new Error(`accepted: ${name} ${args.join(' ')}`);
}

describe('boxauth reads its arguments strictly', function () {
  it('refuses an option its subcommand does not take, naming it (user list --group eng lists nobody)', function () {
    expect(refusal('user', ['list', '--group', 'eng']).message).to.equal('--group does not apply to user list (usage: boxauth user list)');
    expect(refusal('group', ['list', '--description', 'x']).message).to.include('--description does not apply to group list');
    expect(refusal('client', ['delete', 'a', '-f', 'x.yaml']).message).to.include('--filename does not apply to client delete');
    expect(refusal('keys', ['--alg', 'RS256']).message).to.include('--alg does not apply to keys list');
  });

  it('refuses an option no command has, and a value missing', function () {
    expect(refusal('client', ['list', '--xyz']).message).to.equal('unknown option --xyz');
    expect(refusal('user', ['new', '--data']).message).to.equal('--data needs a value');
  });

  it('refuses arguments too many or too few, naming the extra ones', function () {
    expect(refusal('user', ['get', 'a@example.com', 'b']).message).to.equal('unexpected argument "b" (usage: boxauth user get <id|email>)');
    expect(refusal('user', ['list', 'everyone']).message).to.include('unexpected argument "everyone"');
    expect(refusal('client', ['get']).message).to.equal('usage: boxauth client get <id>');
    expect(refusal('settings', ['now']).message).to.include('unexpected argument "now"');
    expect(refusal('events', ['sign_in']).message).to.include('unexpected argument "sign_in"');
    expect(refusal('user', ['frobnicate']).message).to.include('unknown subcommand "user frobnicate"');
  });

  it('takes a verb by its other name, and options anywhere', function () {
    const given = readCommand(command('session'), ['-o', 'json', 'close', 'abc']);
    expect(given).to.deep.include({ verb: 'delete', args: ['abc'] });
    expect(readCommand(command('user'), ['create', 'a@example.com:pw'])).to.deep.include({ verb: 'new' });
    expect(readCommand(command('keys'), [])).to.deep.include({ verb: 'list' });
    expect(readCommand(command('user'), ['help'])).to.equal('help');
    expect(readCommand(command('user'), ['get', '--help'])).to.equal('help');
  });

  it('answers a command by each of its names with the same help, and exit 2 for an unknown one', async function () {
    let out = '';
    let err = '';
    const io: Io = { out: (t) => (out += t), err: (t) => (err += t), prompter: () => ({}) as never, env: {}, cwd: '/' };
    expect(await main(['sessions', '--help'], io)).to.equal(0);
    const plural = out;
    out = '';
    expect(await main(['session', 'help'], io)).to.equal(0);
    expect(out).to.equal(plural);
    expect(await main(['sesion', 'list'], io)).to.equal(2);
    expect(err).to.include('unknown command "sesion"');
    err = '';
    expect(await main(['user', 'list', '--group', 'eng'], io)).to.equal(2);
    expect(err).to.equal('boxauth user: --group does not apply to user list (usage: boxauth user list)\n');
  });
});
