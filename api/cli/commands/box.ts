import { CliError } from '../api.js';
import { checkBoxUrl } from '../box-check.js';
import { configPath, currentBox, LOCAL_BOX, localBox, readBoxes, writeBoxes } from '../boxes.js';
import { asking, parse, usage, type Command } from '../command.js';
import { outputHelp, OUTPUT_OPTION, outputFormat, printList, type Column } from '../output.js';

const HELP = `Usage: boxauth box <subcommand>

Remember boxes (URL and client credentials) in ${'$'}XDG_CONFIG_HOME/boxauth/config.json
(~/.config/boxauth/config.json, mode 0600); the current box is the one commands talk to.
With none current, commands talk to the box \`make run\` serves from this directory
(.boxauth/root-client.json), listed as "local (default)".
BOXAUTH_URL, BOXAUTH_CLIENT_ID and BOXAUTH_CLIENT_SECRET override the current box's fields.

Subcommands:
  box add <name> <url> --client-id <id> [--client-secret <secret>] [--no-check]
                       remember a box (asks for the secret when not given) and make it current.
                       First <url>/.well-known/oauth-authorization-server must answer with
                       issuer <url>: a URL that is not a box is refused, and nothing is saved
  box use <name>       make <name> the current box (local: back to the box of \`make run\`)
  box list             the boxes remembered and the local one, the current one marked with *
  box remove <name>    forget a box

Options:
  --no-check                     for add: save without asking the URL (a box not reachable yet)
${outputHelp(33, 'lists')}
`;

interface Listed {
  name: string;
  url: string;
  client_id: string;
  current: boolean;
  /** The box of `make run` in this directory, used when no box is current. */
  default?: true;
}

const COLUMNS: Column<Listed>[] = [
  { header: 'CURRENT', cell: (b) => (b.current ? '*' : '') },
  { header: 'NAME', cell: (b) => (b.default ? `${b.name} (default)` : b.name) },
  { header: 'URL', cell: (b) => b.url },
  { header: 'CLIENT', cell: (b) => b.client_id },
];

export const boxCommand: Command = {
  name: 'box',
  summary: 'remember boxes and choose the current one',
  help: HELP,
  async run(args, io) {
    const { values, positionals } = parse(args, {
      'client-id': { type: 'string' },
      'client-secret': { type: 'string' },
      'no-check': { type: 'boolean' },
      ...OUTPUT_OPTION,
      help: { type: 'boolean', short: 'h' },
    });
    const [sub, ...rest] = positionals;
    if (values.help || !sub || sub === 'help') return io.out(HELP);
    const format = outputFormat(values.output, io);
    const file = configPath(io.env);
    const boxes = readBoxes(file);
    switch (sub) {
      case 'add': {
        const [name, given] = rest;
        if (!name || !given || rest.length > 2)
          throw usage('usage: boxauth box add <name> <url> --client-id <id> [--client-secret <secret>] [--no-check]');
        if (!/^https?:\/\/[^\s]+$/.test(given)) throw usage(`not an http(s) URL: ${given}`);
        if (!values['client-id']) throw usage('--client-id is required');
        const url = given.replace(/\/+$/, '');
        if (!values['no-check']) await checkBoxUrl(url);
        const secret = values['client-secret'] ?? (await asking(io, (p) => p.askHidden('Client secret: ')));
        if (!secret) throw usage('a client secret is required');
        boxes.boxes[name] = { url, client_id: values['client-id'], client_secret: secret };
        boxes.current = name;
        writeBoxes(boxes, file);
        return io.out(`Box "${name}" (${url}) added and now current.\n`);
      }
      case 'use': {
        const [name] = rest;
        if (!name) throw usage('usage: boxauth box use <name>');
        const local = localBox(io.cwd);
        if (!boxes.boxes[name] && name === LOCAL_BOX && local) {
          delete boxes.current;
          writeBoxes(boxes, file);
          return io.out(`Now using the box of \`make run\` here (${local.box.url}, ${local.file}).\n`);
        }
        if (!boxes.boxes[name]) throw new CliError(`no box named "${name}" (known: ${Object.keys(boxes.boxes).join(', ') || 'none'})`);
        boxes.current = name;
        writeBoxes(boxes, file);
        return io.out(`Now using box "${name}" (${boxes.boxes[name].url}).\n`);
      }
      case 'list': {
        const current = currentBox(boxes);
        const listed: Listed[] = Object.keys(boxes.boxes)
          .sort()
          .map((name) => {
            const { url, client_id } = boxes.boxes[name]!;
            return { name, url, client_id, current: name === current };
          });
        const local = localBox(io.cwd);
        if (local) listed.push({ name: LOCAL_BOX, url: local.box.url, client_id: local.box.client_id, current: !current, default: true });
        if (!listed.length)
          io.err('No boxes yet: `make run` starts one here, or boxauth box add <name> <url> --client-id <id> remembers one.\n');
        const overriding = ['BOXAUTH_URL', 'BOXAUTH_CLIENT_ID', 'BOXAUTH_CLIENT_SECRET'].filter((v) => io.env[v]);
        if (overriding.length) io.err(`${overriding.join(', ')} set: they override the current box's fields.\n`);
        return printList(io, format, listed, COLUMNS);
      }
      case 'remove': {
        const [name] = rest;
        if (!name || !boxes.boxes[name]) throw new CliError(`no box named "${name ?? ''}"`);
        delete boxes.boxes[name];
        if (boxes.current === name) delete boxes.current;
        writeBoxes(boxes, file);
        return io.out(`Box "${name}" forgotten.\n`);
      }
      default:
        throw usage(`unknown subcommand "box ${sub}"; see boxauth box help`);
    }
  },
};
