import { CliError } from '../api.js';
import { checkBoxUrl } from '../box-check.js';
import { configPath, currentBox, LOCAL_BOX, localBox, readBoxes, writeBoxes } from '../boxes.js';
import { asking, OUTPUT, text, usage, flag, type Command, type CommandSpec } from '../command.js';
import { changeFormat, outputFormat, printChange, printList, type Column } from '../output.js';

const SPEC: CommandSpec = {
  name: 'box',
  aliases: ['boxes'],
  summary: 'remember boxes and choose the current one',
  about: `Remember boxes (URL and client credentials) in ${'$'}XDG_CONFIG_HOME/boxauth/config.json
(~/.config/boxauth/config.json, mode 0600); the current box is the one commands talk to.
With none current, commands talk to the box \`make run\` serves from this directory
(.boxauth/root-client.json), listed as "local (default)".
BOXAUTH_URL, BOXAUTH_CLIENT_ID and BOXAUTH_CLIENT_SECRET override the current box's fields.`,
  options: {
    'client-id': { type: 'string', usage: '--client-id <id>', summary: 'the client the CLI signs in as' },
    'client-secret': { type: 'string', usage: '--client-secret <secret>', summary: "the client's secret (asked for when not given)" },
    'no-check': { type: 'boolean', summary: 'save without asking the URL (a box not reachable yet)' },
    output: OUTPUT,
  },
  verbs: {
    add: {
      args: '<name> <url> --client-id <id> [--client-secret <secret>] [--no-check]',
      count: [2, 2],
      summary:
        'remember a box (asks for the secret when not given) and make it current. First <url>/.well-known/oauth-authorization-server must answer with issuer <url>: a URL that is not a box is refused, and nothing is saved',
      options: ['client-id', 'client-secret', 'no-check', 'output'],
    },
    use: {
      args: '<name>',
      count: [1, 1],
      summary: 'make <name> the current box (local: back to the box of `make run`)',
      options: ['output'],
    },
    list: { summary: 'the boxes remembered and the local one, the current one marked with *', options: ['output'] },
    remove: { args: '<name>', count: [1, 1], aliases: ['delete'], summary: 'forget a box', options: ['output'] },
  },
};

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

/** What -o prints of a box changed: never its secret. */
const shown = (name: string, url: string, client_id: string, current: boolean) => ({ name, url, client_id, current });

export const boxCommand: Command = {
  spec: SPEC,
  async run({ verb: sub, args: rest, values }, io) {
    const file = configPath(io.env);
    const boxes = readBoxes(file);
    switch (sub) {
      case 'add': {
        const format = changeFormat(values);
        const [name = '', given = ''] = rest;
        if (!/^https?:\/\/[^\s]+$/.test(given)) throw usage(`not an http(s) URL: ${given}`);
        const clientId = text(values, 'client-id');
        if (!clientId) throw usage('--client-id is required');
        const url = given.replace(/\/+$/, '');
        if (!flag(values, 'no-check')) await checkBoxUrl(url);
        const secret = text(values, 'client-secret') ?? (await asking(io, (p) => p.askHidden('Client secret: ')));
        if (!secret) throw usage('a client secret is required');
        boxes.boxes[name] = { url, client_id: clientId, client_secret: secret };
        boxes.current = name;
        writeBoxes(boxes, file);
        return printChange(io, format, shown(name, url, clientId, true), `Box "${name}" (${url}) added and now current.\n`);
      }
      case 'use': {
        const format = changeFormat(values);
        const [name = ''] = rest;
        const local = localBox(io.cwd);
        if (!boxes.boxes[name] && name === LOCAL_BOX && local) {
          delete boxes.current;
          writeBoxes(boxes, file);
          return printChange(
            io,
            format,
            shown(LOCAL_BOX, local.box.url, local.box.client_id, true),
            `Now using the box of \`make run\` here (${local.box.url}, ${local.file}).\n`,
          );
        }
        const chosen = boxes.boxes[name];
        if (!chosen) throw new CliError(`no box named "${name}" (known: ${Object.keys(boxes.boxes).join(', ') || 'none'})`);
        boxes.current = name;
        writeBoxes(boxes, file);
        return printChange(io, format, shown(name, chosen.url, chosen.client_id, true), `Now using box "${name}" (${chosen.url}).\n`);
      }
      case 'list': {
        const format = outputFormat(values, io);
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
        const format = changeFormat(values);
        const [name = ''] = rest;
        const forgotten = boxes.boxes[name];
        if (!forgotten) throw new CliError(`no box named "${name}"`);
        const wasCurrent = boxes.current === name;
        delete boxes.boxes[name];
        if (wasCurrent) delete boxes.current;
        writeBoxes(boxes, file);
        return printChange(io, format, shown(name, forgotten.url, forgotten.client_id, wasCurrent), `Box "${name}" forgotten.\n`);
      }
      default:
        throw usage(`unknown subcommand "box ${sub}"; see boxauth box help`);
    }
  },
};
