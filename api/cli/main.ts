// `boxauth`: the command line of boxauth. Errors are one line on stderr and a
// non-zero exit (1: the box or the network said no; 2: the command was wrong).
import fs from 'node:fs';
import { errorMessage } from '../errors.js';
import { projectPath } from '../paths.js';
import { CliError } from './api.js';
import type { Command, Io } from './command.js';
import { printed } from './output.js';
import { boxCommand } from './commands/box.js';
import { kubeLoginCommand } from './commands/kube-login.js';
import { groupCommand, userCommand } from './commands/people.js';
import { sessionsCommand } from './commands/people-sessions.js';
import { explainCommand } from './commands/explain.js';
import { eventsCommand } from './commands/events.js';
import { keysCommand, settingsCommand } from './commands/keys.js';
import { appCommand, clientCommand, idpCommand, policyCommand, sessionCommand } from './commands/resources.js';
import { Prompter } from './prompt.js';

const COMMANDS: Command[] = [
  userCommand,
  groupCommand,
  clientCommand,
  policyCommand,
  appCommand,
  idpCommand,
  explainCommand,
  eventsCommand,
  sessionCommand,
  sessionsCommand,
  keysCommand,
  settingsCommand,
  boxCommand,
  kubeLoginCommand,
];

/** The version of the boxauth package this command is (package.json). */
function version(): string {
  return (JSON.parse(fs.readFileSync(projectPath('package.json'), 'utf8')) as { version: string }).version;
}

function help(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return `Usage: boxauth <command> <subcommand> [options]
       boxauth --version

Manage a boxauth box from the shell.

Commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`).join('\n')}

Options:
  -h, --help     this text
  -V, --version  the version of boxauth this command is

Run \`boxauth <command> help\` for a command's subcommands and options.
Without a configured box, commands talk to the box \`make run\` serves from this directory.
Lists and gets take --output table|json|yaml (default: a table on a terminal, JSON otherwise).
Exit status: 0 done, 1 the box or the network refused, 2 the command was wrong.
`;
}

export async function main(argv: string[], io: Io): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === 'help' || name === '--help' || name === '-h') {
    io.out(help());
    return 0;
  }
  if (name === '--version' || name === '-V' || name === 'version') {
    io.out(`boxauth ${version()}\n`);
    return 0;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) {
    io.err(`boxauth: unknown command "${name}"; run boxauth help\n`);
    return 2;
  }
  try {
    await command.run(rest, io);
    return 0;
  } catch (err) {
    // An error may carry what the box said (a 422's messages, an error_description): escaped, as every server string.
    if (err instanceof CliError) {
      io.err(printed`boxauth ${name}: ${err.message}\n`);
      return err.exitCode;
    }
    io.err(printed`boxauth ${name}: ${errorMessage(err)}\n`);
    return 1;
  }
}

const io: Io = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  prompter: () => new Prompter(),
  env: process.env,
  cwd: process.cwd(),
  terminal: process.stdout.isTTY === true,
};

main(process.argv.slice(2), io).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`boxauth: ${errorMessage(err)}\n`);
    process.exitCode = 1;
  },
);
