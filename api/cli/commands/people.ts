// boxauth user … and boxauth group …
import { errorMessage } from '../../errors.js';
import { CliError } from '../api.js';
import { allPages, parse, printJson, usage, withBox, type Command, type Io } from '../command.js';

const USER_HELP = `Usage: boxauth user <subcommand>

Subcommands:
  user help                   this list
  user list                   the users of the current box, as raw JSON (email_verified: whether
                              apps and Kubernetes are told the box vouches for the address)
  user new                    asks for Email and Password (not echoed), then creates the user
  user new <email>:<password> creates the user inline (the password may contain ':')
  user get <id>               one user, as JSON
  user delete <id>            deletes a user and closes their sessions
Options for new: --data '<json>'  --group <id> (repeatable)
`;

async function createUser(io: Io, email: string, password: string, data: string | undefined, groups: string[]): Promise<void> {
  await withBox(io, async (api) => {
    const body: Record<string, unknown> = {
      email,
      password,
      ...(data !== undefined ? { data } : {}),
      ...(groups.length ? { 'group-ids': groups } : {}),
    };
    const created = await api.call<{ id: number; email: string; email_verified: boolean }>('POST', '/users', body);
    const verified = created.body.email_verified ? 'email verified' : 'email not verified';
    io.out(
      `Created user ${created.body.email} (id ${created.body.id}, ${verified}) in box "${await api.boxName()}" (${api.target.url}).\n`,
    );
  });
}

export const userCommand: Command = {
  name: 'user',
  summary: 'list and create the users of the current box',
  help: USER_HELP,
  async run(args, io) {
    const { values, positionals } = parse(args, {
      data: { type: 'string' },
      group: { type: 'string', multiple: true },
      help: { type: 'boolean', short: 'h' },
    });
    const [sub, ...rest] = positionals;
    if (values.help || !sub || sub === 'help') return io.out(USER_HELP);
    switch (sub) {
      case 'list':
        return withBox(io, async (api) => printJson(io, await allPages(api, '/users')));
      case 'new': {
        if (rest.length > 1) throw usage('usage: boxauth user new [<email>:<password>]');
        let email: string;
        let password: string;
        if (rest[0] !== undefined) {
          const colon = rest[0].indexOf(':');
          if (colon < 1) throw usage('expected <email>:<password>, e.g. boxauth user new ann@example.com:s3cret-pass');
          email = rest[0].slice(0, colon);
          password = rest[0].slice(colon + 1);
        } else {
          const prompter = io.prompter();
          try {
            email = (await prompter.ask('Email: ')).trim();
            password = await prompter.askHidden('Password: ');
          } catch (err) {
            throw new CliError(errorMessage(err) === 'cancelled' ? 'cancelled' : `no answer: ${errorMessage(err)}`);
          } finally {
            prompter.close();
          }
        }
        return createUser(io, email, password, values.data, values.group ?? []);
      }
      case 'get':
        if (!rest[0]) throw usage('usage: boxauth user get <id>');
        return withBox(io, async (api) => printJson(io, (await api.call('GET', `/users/${encodeURIComponent(rest[0]!)}`)).body));
      case 'delete':
        if (!rest[0]) throw usage('usage: boxauth user delete <id>');
        return withBox(io, async (api) => {
          const deleted = await api.call<{ email: string }>('DELETE', `/users/${encodeURIComponent(rest[0]!)}`);
          io.out(`Deleted user ${deleted.body.email} from box "${await api.boxName()}".\n`);
        });
      default:
        throw usage(`unknown subcommand "user ${sub}"; see boxauth user help`);
    }
  },
};

const GROUP_HELP = `Usage: boxauth group <subcommand>

Subcommands:
  group list                              the groups of the current box, as raw JSON
  group new <name> [--description <text>] creates a group
  group delete <id>                       deletes a group (its members stay, without it)
`;

export const groupCommand: Command = {
  name: 'group',
  summary: 'list and create groups',
  help: GROUP_HELP,
  async run(args, io) {
    const { values, positionals } = parse(args, { description: { type: 'string' }, help: { type: 'boolean', short: 'h' } });
    const [sub, ...rest] = positionals;
    if (values.help || !sub || sub === 'help') return io.out(GROUP_HELP);
    switch (sub) {
      case 'list':
        return withBox(io, async (api) => printJson(io, await allPages(api, '/groups')));
      case 'new':
        if (rest.length !== 1) throw usage('usage: boxauth group new <name> [--description <text>]');
        return withBox(io, async (api) => {
          const created = await api.call<{ id: number; name: string }>('POST', '/groups', {
            name: rest[0],
            description: values.description ?? null,
          });
          io.out(`Created group ${created.body.name} (id ${created.body.id}) in box "${await api.boxName()}".\n`);
        });
      case 'delete':
        if (!rest[0]) throw usage('usage: boxauth group delete <id>');
        return withBox(io, async (api) => {
          const deleted = await api.call<{ name: string }>('DELETE', `/groups/${encodeURIComponent(rest[0]!)}`);
          io.out(`Deleted group ${deleted.body.name}.\n`);
        });
      default:
        throw usage(`unknown subcommand "group ${sub}"; see boxauth group help`);
    }
  },
};
