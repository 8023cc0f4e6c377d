import { CliError } from '../api.js';
import { configPath, readBoxes, writeBoxes } from '../boxes.js';
import { parse, usage, type Command } from '../command.js';

const HELP = `Usage: boxauth box <subcommand>

Remember boxes (URL and client credentials) in ${'$'}XDG_CONFIG_HOME/boxauth/config.json
(~/.config/boxauth/config.json, mode 0600); the current box is the one commands talk to.
BOXAUTH_URL, BOXAUTH_CLIENT_ID and BOXAUTH_CLIENT_SECRET override the current box's fields.

Subcommands:
  box add <name> <url> --client-id <id> [--client-secret <secret>]
                       remember a box (asks for the secret when not given) and make it current
  box use <name>       make <name> the current box
  box list             the boxes remembered, the current one marked with *
  box remove <name>    forget a box
`;

export const boxCommand: Command = {
  name: 'box',
  summary: 'remember boxes and choose the current one',
  help: HELP,
  async run(args, io) {
    const { values, positionals } = parse(args, {
      'client-id': { type: 'string' },
      'client-secret': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    });
    const [sub, ...rest] = positionals;
    if (values.help || !sub || sub === 'help') return io.out(HELP);
    const file = configPath(io.env);
    const boxes = readBoxes(file);
    switch (sub) {
      case 'add': {
        const [name, url] = rest;
        if (!name || !url || rest.length > 2)
          throw usage('usage: boxauth box add <name> <url> --client-id <id> [--client-secret <secret>]');
        if (!/^https?:\/\/[^\s]+$/.test(url)) throw usage(`not an http(s) URL: ${url}`);
        if (!values['client-id']) throw usage('--client-id is required');
        let secret = values['client-secret'];
        if (!secret) {
          const prompter = io.prompter();
          try {
            secret = await prompter.askHidden('Client secret: ');
          } finally {
            prompter.close();
          }
        }
        if (!secret) throw usage('a client secret is required');
        boxes.boxes[name] = { url: url.replace(/\/+$/, ''), client_id: values['client-id'], client_secret: secret };
        boxes.current = name;
        writeBoxes(boxes, file);
        return io.out(`Box "${name}" (${url}) added and now current.\n`);
      }
      case 'use': {
        const [name] = rest;
        if (!name) throw usage('usage: boxauth box use <name>');
        if (!boxes.boxes[name]) throw new CliError(`no box named "${name}" (known: ${Object.keys(boxes.boxes).join(', ') || 'none'})`);
        boxes.current = name;
        writeBoxes(boxes, file);
        return io.out(`Now using box "${name}" (${boxes.boxes[name].url}).\n`);
      }
      case 'list': {
        const names = Object.keys(boxes.boxes).sort();
        if (!names.length) return io.out('No boxes yet: boxauth box add <name> <url> --client-id <id>\n');
        for (const name of names) {
          const b = boxes.boxes[name]!;
          io.out(`${name === boxes.current ? '*' : ' '} ${name}\t${b.url}\tclient ${b.client_id}\n`);
        }
        return;
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
