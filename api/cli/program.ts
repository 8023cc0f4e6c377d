// `boxauth`'s commands and how a command line is run: errors are one line on stderr and a
// non-zero exit (1: the box or the network said no; 2: the command was wrong). main.ts runs it.
import fs from 'node:fs';
import { errorMessage } from '../errors.js';
import { projectPath } from '../paths.js';
import { CliError } from './api.js';
import { commandHelp, helpColumns, names, OUTPUT, readCommand, usage, type Command, type Io } from './command.js';
import { resolveTarget } from './boxes.js';
import { bashCompletion, zshCompletion } from './completion.js';
import { outputFormat, printable, printed, printRecord } from './output.js';
import { boxCommand } from './commands/box.js';
import { kubeLoginCommand } from './commands/kube-login.js';
import { groupCommand, userCommand } from './commands/people.js';
import { explainCommand } from './commands/explain.js';
import { eventsCommand } from './commands/events.js';
import { keysCommand, settingsCommand } from './commands/keys.js';
import { appCommand, clientCommand, hookCommand, idpCommand, policyCommand, sessionCommand, webhookCommand } from './commands/resources.js';

/** The version of the boxauth package this command is (package.json). */
function version(): string {
  return (JSON.parse(fs.readFileSync(projectPath('package.json'), 'utf8')) as { version: string }).version;
}

/**
 * The version of the box the CLI is configured for, as its OpenAPI document says (the box's
 * release: GET /openapi.json, no sign-in needed); undefined when there is no box or it does not answer.
 */
async function serverVersion(io: Io): Promise<{ url: string; version: string } | undefined> {
  try {
    const { url } = resolveTarget(io.env, io.cwd);
    const res = await fetch(`${url}/openapi.json`, { signal: AbortSignal.timeout(5000) });
    const body = (await res.json()) as { info?: { version?: unknown } };
    return res.ok && typeof body.info?.version === 'string' ? { url, version: body.info.version } : undefined;
  } catch {
    return undefined;
  }
}

const versionCommand: Command = {
  spec: {
    name: 'version',
    summary: 'the version of boxauth this command is (-o json|yaml: and of the current box)',
    about: `Prints the version of this command. With -o json or yaml, the client's version and, when a
box is configured and answers, the box's (from its /openapi.json), as kubectl version does.`,
    options: {
      output: { ...OUTPUT, usage: '-o, --output json|yaml', summary: 'the versions of the client and the box', values: ['json', 'yaml'] },
    },
  },
  async run({ values }, io) {
    if (values.output === undefined) return io.out(`boxauth ${version()}\n`);
    const format = outputFormat(values, io);
    if (format === 'table') throw usage('--output of version must be json or yaml');
    const server = await serverVersion(io);
    printRecord(io, format, { clientVersion: { version: version() }, ...(server ? { serverVersion: server } : {}) }, []);
  },
};

const completionCommand: Command = {
  spec: {
    name: 'completion',
    summary: 'a shell script that completes boxauth commands: bash or zsh',
    args: 'bash|zsh',
    count: [1, 1],
    completes: ['bash', 'zsh'],
    about: `Prints a script that completes boxauth's commands, subcommands, options and the values of
options with a few (-o table|json|yaml) in bash or zsh.`,
    options: {},
    notes: `Examples:
  source <(boxauth completion bash)                  # in ~/.bashrc
  boxauth completion zsh > "\${fpath[1]}/_boxauth"    # zsh, then start a new shell`,
  },
  async run({ args: [shell] }, io) {
    if (shell === 'bash') return io.out(bashCompletion(COMMANDS.map((c) => c.spec)));
    if (shell === 'zsh') return io.out(zshCompletion(COMMANDS.map((c) => c.spec)));
    throw usage(`completion is for bash or zsh, not "${printable(shell ?? '')}"`);
  },
};

const COMMANDS: Command[] = [
  userCommand,
  groupCommand,
  clientCommand,
  policyCommand,
  appCommand,
  idpCommand,
  webhookCommand,
  hookCommand,
  sessionCommand,
  explainCommand,
  eventsCommand,
  keysCommand,
  settingsCommand,
  boxCommand,
  kubeLoginCommand,
  versionCommand,
  completionCommand,
];

/** Every command, for the tests of their help and completion. */
export const commands = (): readonly Command[] => COMMANDS;

/** The help of `boxauth` itself. */
export function help(): string {
  return `Usage: boxauth <command> <subcommand> [options]
       boxauth --version

Manage a boxauth box from the shell.

Commands:
${helpColumns(COMMANDS.map((c) => [c.spec.name, c.spec.summary]))}
Options:
${helpColumns([
  ['-h, --help', 'this text'],
  ['-V, --version', 'the version of boxauth this command is'],
])}
Run \`boxauth <command> help\` for a command's subcommands and options.
Records have kubectl's verbs: list, get, describe, create, apply -f, edit, delete.
Without a configured box, commands talk to the box \`make run\` serves from this directory.
Lists and gets take --output table|json|yaml (default: a table on a terminal, JSON otherwise);
changes take -o json|yaml to print the record as written.
Exit status: 0 done, 1 the box or the network refused, 2 the command was wrong.
`;
}

export async function main(argv: string[], io: Io): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === 'help' || name === '--help' || name === '-h') {
    io.out(help());
    return 0;
  }
  if (name === '--version' || name === '-V') {
    io.out(`boxauth ${version()}\n`);
    return 0;
  }
  const command = COMMANDS.find((c) => names(c.spec).includes(name));
  if (!command) {
    io.err(printed`boxauth: unknown command "${name}"; run boxauth help\n`);
    return 2;
  }
  const shown = command.spec.name;
  try {
    const given = readCommand(command.spec, rest);
    if (given === 'help') io.out(commandHelp(command.spec));
    else await command.run(given, io);
    return 0;
  } catch (err) {
    // An error may carry what the box said (a 422's messages, an error_description): escaped, as every server string.
    if (err instanceof CliError) {
      io.err(printed`boxauth ${shown}: ${err.message}\n`);
      return err.exitCode;
    }
    io.err(printed`boxauth ${shown}: ${errorMessage(err)}\n`);
    return 1;
  }
}
