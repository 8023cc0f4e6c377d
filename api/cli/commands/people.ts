// boxauth user … and boxauth group …
import type { BoxApi } from '../api.js';
import { allPages, asking, parse, usage, withBox, type Command, type Io } from '../command.js';
import { findGroup, findUser, groupIds, type GroupRecord, type UserRecord } from '../lookup.js';
import { endSessions, showSessions, vouch } from './people-sessions.js';
import { outputHelp, OUTPUT_OPTION, outputFormat, printed, printList, printRecord, type Column } from '../output.js';

const USER_HELP = `Usage: boxauth user <subcommand>

A user is named by id or email, a group by id or name (a name of digits only reads as an id).

Subcommands:
  user help                          this list
  user list                          the users of the current box (email_verified: whether apps and
                                     Kubernetes are told the box vouches for the address)
  user get <id|email>                one user, without its password hash (--show-password-hash: with it)
  user new                           asks for Email and Password (not echoed), then creates the user
  user new <email>:<password>        creates the user inline (the password may contain ':')
  user set-password <id|email>       asks for the new password twice (not echoed); --password-stdin
                                     reads it from stdin instead. The box then ends the user's
                                     sessions: signed-in browsers, codes, and every token
  user add-to-group <id|email> <group>...       adds the user to the groups
  user remove-from-group <id|email> <group>...  takes the user out of the groups
  user set-groups <id|email> <group>...         makes these the user's only groups
  user delete <id|email>             deletes a user and closes their sessions
  user factors <id|email>            the user's second factors (passkeys, TOTP), recovery codes left,
                                     and whether they must enrol one
  user reset-factors <id|email>      removes every second factor and recovery code of the user (a lost
                                     phone, a stolen passkey): they enrol a new one at their next
                                     sign-in, and their signed-in browsers, codes and tokens end
  user sessions <id|email>           the user's signed-in browsers and grants to apps: since when,
                                     from where, which factors, which client
  user end-sessions <id|email>       signs the user out everywhere: browsers, codes and tokens end;
                                     --sid <sid>: one signed-in browser and what was issued through
                                     it; --grant <id>: one grant to an app (access and refresh token)
  user vouch <id|email>              the box vouches for the user's address (email_verified true,
                                     audited as the administrator's word; no link is needed)
  user unvouch <id|email>            the box no longer vouches for it (email_verified false)
  user disable <id|email>            turns the user off (active false): they cannot sign in, and their
                                     signed-in browsers, codes and tokens end at once
  user enable <id|email>             turns the user on again (active true): they may sign in
  user identities <id|email>         the user's identities at upstream providers (which provider,
                                     the subject there, since when, last used)
  user unlink <id|email> <provider>  unlinks the user's identity at that provider: it no longer signs
                                     them in (even when it was their only way in)

Options:
  --group <name|id>                  for new: a group to join (repeatable)
  --data '<json>'                    for new: the user's data (profile claims), as JSON text
  --password-stdin                   for set-password: the password is stdin (one trailing newline dropped)
  --show-password-hash               for get: print the argon2id hash too
  --sid <sid>, --grant <id>          for end-sessions: end only this browser, or only this grant
${outputHelp(37, 'list and get')}
`;

const USER_COLUMNS: Column<UserRecord>[] = [
  { header: 'ID', cell: (u) => u.id },
  { header: 'EMAIL', cell: (u) => u.email },
  { header: 'EMAIL_VERIFIED', cell: (u) => u.email_verified },
  { header: 'ACTIVE', cell: (u) => u.active },
  { header: 'GROUPS', cell: (u) => u.groups.map((g) => g.name) },
];

/** A group's members: who they are, and whether they may sign in. */
const MEMBER_COLUMNS: Column<UserRecord>[] = [
  { header: 'ID', cell: (u) => u.id },
  { header: 'EMAIL', cell: (u) => u.email },
  { header: 'ACTIVE', cell: (u) => u.active },
];

/** A person's identity at an upstream provider, as GET /users/<id>/identities shows it. */
interface IdentityRecord {
  provider: string;
  subject: string;
  email: string | null;
  linked_at: string;
  last_used_at: string;
}

const IDENTITY_COLUMNS: Column<IdentityRecord>[] = [
  { header: 'PROVIDER', cell: (i) => i.provider },
  { header: 'SUBJECT', cell: (i) => i.subject },
  { header: 'EMAIL', cell: (i) => i.email },
  { header: 'LINKED_AT', cell: (i) => i.linked_at },
  { header: 'LAST_USED_AT', cell: (i) => i.last_used_at },
];

const GROUP_COLUMNS: Column<GroupRecord>[] = [
  { header: 'ID', cell: (g) => g.id },
  { header: 'NAME', cell: (g) => g.name },
  { header: 'REQUIRE_SECOND_FACTOR', cell: (g) => g.require_second_factor },
  { header: 'DESCRIPTION', cell: (g) => g.description },
];

/** A person's factors as GET /users/<id>/factors shows them. */
interface FactorsRecord {
  factors: { id: number; kind: string; name: string; created_at: string; last_used_at: string | null; device_type: string | null }[];
  recovery_codes_left: number;
  must_enrol: boolean;
  group_requires: boolean;
}

const FACTOR_COLUMNS: Column<FactorsRecord['factors'][number]>[] = [
  { header: 'ID', cell: (f) => f.id },
  { header: 'KIND', cell: (f) => f.kind },
  { header: 'NAME', cell: (f) => f.name },
  { header: 'CREATED_AT', cell: (f) => f.created_at },
  { header: 'LAST_USED_AT', cell: (f) => f.last_used_at },
  { header: 'DEVICE_TYPE', cell: (f) => f.device_type },
];

/** What the factors' list does not say: the rules over them. */
function factorRules(user: UserRecord, f: FactorsRecord): string {
  const rules = [
    `${f.recovery_codes_left} recovery code${f.recovery_codes_left === 1 ? '' : 's'} left`,
    ...(f.must_enrol ? ['must enrol a second factor at the next sign-in'] : []),
    ...(f.group_requires ? ['a group of theirs requires a second factor'] : []),
  ];
  return printed`${user.email} (id ${user.id}): ${rules.join('; ')}.\n`;
}

/** `--require-second-factor true|false`, when given. */
function requireFlag(value: string | undefined): boolean | undefined {
  if (value === undefined) return undefined;
  if (value === 'true' || value === 'false') return value === 'true';
  throw usage(`--require-second-factor takes true or false, not "${value}"`);
}

/** The new password: stdin as a whole, or typed twice without echo. */
async function newPassword(io: Io, fromStdin: boolean): Promise<string> {
  if (fromStdin) {
    const password = (await asking(io, (p) => p.readAll())).replace(/\r?\n$/, '');
    if (!password) throw usage('--password-stdin read no password');
    return password;
  }
  const [first, again] = await asking(io, async (p) => [await p.askHidden('New password: '), await p.askHidden('Again: ')]);
  if (!first) throw usage('no password typed; nothing changed');
  if (first !== again) throw usage('the passwords differ; nothing changed');
  return first;
}

/** Replaces the user's groups, and says which they are now. */
async function putGroups(io: Io, api: BoxApi, user: UserRecord, ids: number[]): Promise<void> {
  const changed = (await api.call<UserRecord>('PUT', `/users/${user.id}`, { 'group-ids': ids })).body;
  const names = changed.groups.map((g) => g.name).sort();
  io.out(printed`${changed.email} is now in ${names.length ? names.join(', ') : 'no group'}.\n`);
}

/** Turns the user off or on (PUT active): off ends everything they obtained, as the box's API does. */
async function setActive(io: Io, ref: string, active: boolean): Promise<void> {
  await withBox(io, async (api) => {
    const user = await findUser(api, ref);
    const changed = (await api.call<UserRecord>('PUT', `/users/${user.id}`, { active })).body;
    const box = await api.boxName();
    io.out(
      active
        ? printed`Turned ${changed.email} (id ${changed.id}) on in box "${box}": they may sign in again.\n`
        : printed`Turned ${changed.email} (id ${changed.id}) off in box "${box}": they cannot sign in, ` +
            'and their signed-in browsers, codes and tokens were ended.\n',
    );
  });
}

async function createUser(io: Io, email: string, password: string, data: string | undefined, groups: string[]): Promise<void> {
  await withBox(io, async (api) => {
    const body: Record<string, unknown> = {
      email,
      password,
      ...(data !== undefined ? { data } : {}),
      ...(groups.length ? { 'group-ids': await groupIds(api, groups) } : {}),
    };
    const created = await api.call<{ id: number; email: string; email_verified: boolean }>('POST', '/users', body);
    const verified = created.body.email_verified ? 'email verified' : 'email not verified';
    io.out(
      printed`Created user ${created.body.email} (id ${created.body.id}, ${verified}) in box "${await api.boxName()}" (${api.target.url}).\n`,
    );
  });
}

export const userCommand: Command = {
  name: 'user',
  summary: 'list, create and change the users of the current box',
  help: USER_HELP,
  async run(args, io) {
    const { values, positionals } = parse(args, {
      data: { type: 'string' },
      group: { type: 'string', multiple: true },
      'password-stdin': { type: 'boolean' },
      'show-password-hash': { type: 'boolean' },
      sid: { type: 'string' },
      grant: { type: 'string' },
      ...OUTPUT_OPTION,
      help: { type: 'boolean', short: 'h' },
    });
    const [sub, ...rest] = positionals;
    if (values.help || !sub || sub === 'help') return io.out(USER_HELP);
    const format = outputFormat(values.output, io);
    switch (sub) {
      case 'list':
        return withBox(io, async (api) => printList(io, format, await allPages<UserRecord>(api, '/users'), USER_COLUMNS));
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
          [email, password] = await asking(io, async (p) => [(await p.ask('Email: ')).trim(), await p.askHidden('Password: ')]);
        }
        return createUser(io, email, password, values.data, values.group ?? []);
      }
      case 'get':
        if (rest.length !== 1) throw usage('usage: boxauth user get <id|email> [--show-password-hash]');
        return withBox(io, async (api) => {
          const { password, ...user } = await findUser(api, rest[0]!);
          // The hash is the user's secret at rest: shown only to someone who asks for it.
          if (!values['show-password-hash']) return printRecord(io, format, user, USER_COLUMNS);
          printRecord(io, format, { ...user, password }, [...USER_COLUMNS, { header: 'PASSWORD_HASH', cell: (u) => u.password }]);
        });
      case 'set-password':
        if (rest.length !== 1) throw usage('usage: boxauth user set-password <id|email> [--password-stdin]');
        return withBox(io, async (api) => {
          const user = await findUser(api, rest[0]!);
          const password = await newPassword(io, values['password-stdin'] === true);
          await api.call('PUT', `/users/${user.id}`, { password });
          io.out(
            printed`Password of ${user.email} (id ${user.id}) changed in box "${await api.boxName()}"; ` +
              'their signed-in browsers, codes and tokens were ended: they sign in again with the new password.\n',
          );
        });
      // These read the user's groups and write them back whole (PUT takes the full list):
      // a membership changed by someone else in between is overwritten.
      case 'add-to-group':
      case 'remove-from-group':
      case 'set-groups': {
        if (rest.length < 2) throw usage(`usage: boxauth user ${sub} <id|email> <group>...`);
        const [ref, ...groups] = rest as [string, ...string[]];
        return withBox(io, async (api) => {
          const user = await findUser(api, ref);
          const ids = await groupIds(api, groups);
          const now = user['group-ids'];
          const wanted: Record<typeof sub, number[]> = {
            'add-to-group': [...new Set([...now, ...ids])],
            'remove-from-group': now.filter((id) => !ids.includes(id)),
            'set-groups': ids,
          };
          return putGroups(io, api, user, wanted[sub]);
        });
      }
      case 'factors':
        if (rest.length !== 1) throw usage('usage: boxauth user factors <id|email>');
        return withBox(io, async (api) => {
          const user = await findUser(api, rest[0]!);
          const found = (await api.call<FactorsRecord>('GET', `/users/${user.id}/factors`)).body;
          if (format !== 'table') return printRecord(io, format, found, []);
          printList(io, format, found.factors, FACTOR_COLUMNS);
          io.out(factorRules(user, found));
        });
      case 'reset-factors':
        if (rest.length !== 1) throw usage('usage: boxauth user reset-factors <id|email>');
        return withBox(io, async (api) => {
          const user = await findUser(api, rest[0]!);
          await api.call('POST', `/users/${user.id}/factors/reset`);
          io.out(
            printed`Second factors of ${user.email} (id ${user.id}) reset in box "${await api.boxName()}": ` +
              'their signed-in browsers, codes and tokens were ended, and they enrol a new factor at their next sign-in.\n',
          );
        });
      case 'sessions':
        if (rest.length !== 1) throw usage('usage: boxauth user sessions <id|email>');
        return showSessions(io, format, rest[0]!);
      case 'end-sessions':
        if (rest.length !== 1) throw usage('usage: boxauth user end-sessions <id|email> [--sid <sid> | --grant <id>]');
        return endSessions(io, rest[0]!, {
          ...(values.sid !== undefined ? { sid: values.sid } : {}),
          ...(values.grant !== undefined ? { grant: values.grant } : {}),
        });
      case 'vouch':
      case 'unvouch':
        if (rest.length !== 1) throw usage(`usage: boxauth user ${sub} <id|email>`);
        return vouch(io, rest[0]!, sub === 'vouch');
      case 'disable':
      case 'enable':
        if (rest.length !== 1) throw usage(`usage: boxauth user ${sub} <id|email>`);
        return setActive(io, rest[0]!, sub === 'enable');
      case 'identities':
        if (rest.length !== 1) throw usage('usage: boxauth user identities <id|email>');
        return withBox(io, async (api) => {
          const user = await findUser(api, rest[0]!);
          printList(io, format, (await api.call<IdentityRecord[]>('GET', `/users/${user.id}/identities`)).body, IDENTITY_COLUMNS);
        });
      case 'unlink':
        if (rest.length !== 2) throw usage('usage: boxauth user unlink <id|email> <provider>');
        return withBox(io, async (api) => {
          const user = await findUser(api, rest[0]!);
          await api.call('DELETE', `/users/${user.id}/identities/${encodeURIComponent(rest[1]!)}`);
          io.out(printed`Unlinked ${user.email} (id ${user.id}) from ${rest[1]}: that identity no longer signs them in.\n`);
        });
      case 'delete':
        if (rest.length !== 1) throw usage('usage: boxauth user delete <id|email>');
        return withBox(io, async (api) => {
          const user = await findUser(api, rest[0]!);
          const deleted = await api.call<{ email: string }>('DELETE', `/users/${user.id}`);
          io.out(printed`Deleted user ${deleted.body.email} from box "${await api.boxName()}".\n`);
        });
      default:
        throw usage(`unknown subcommand "user ${sub}"; see boxauth user help`);
    }
  },
};

const GROUP_HELP = `Usage: boxauth group <subcommand>

Subcommands:
  group list                              the groups of the current box
  group get <id|name>                     one group
  group new <name> [--description <text>] creates a group
  group set <id|name> [--description <text>] [--require-second-factor true|false]
                                          changes a group
  group delete <id|name>                  deletes a group (its members stay, without it)
  group members <id|name>                 the group's members (id, email, whether turned on)
  group add-member <id|name> <id|email>...     adds the users to the group
  group remove-member <id|name> <id|email>...  takes the users out of the group

Options:
  --require-second-factor true|false      for new and set: members must have a second factor
                                          (they enrol one at their next sign-in)
${outputHelp(42, 'list and get')}
`;

export const groupCommand: Command = {
  name: 'group',
  summary: 'list and create groups, and change their members',
  help: GROUP_HELP,
  async run(args, io) {
    const { values, positionals } = parse(args, {
      description: { type: 'string' },
      'require-second-factor': { type: 'string' },
      ...OUTPUT_OPTION,
      help: { type: 'boolean', short: 'h' },
    });
    const [sub, ...rest] = positionals;
    if (values.help || !sub || sub === 'help') return io.out(GROUP_HELP);
    const format = outputFormat(values.output, io);
    const requireSecondFactor = requireFlag(values['require-second-factor']);
    switch (sub) {
      case 'list':
        return withBox(io, async (api) => printList(io, format, await allPages<GroupRecord>(api, '/groups'), GROUP_COLUMNS));
      case 'get':
        if (rest.length !== 1) throw usage('usage: boxauth group get <id|name>');
        return withBox(io, async (api) => printRecord(io, format, await findGroup(api, rest[0]!), GROUP_COLUMNS));
      case 'new':
        if (rest.length !== 1) throw usage('usage: boxauth group new <name> [--description <text>]');
        return withBox(io, async (api) => {
          const created = await api.call<{ id: number; name: string }>('POST', '/groups', {
            name: rest[0],
            description: values.description ?? null,
            ...(requireSecondFactor !== undefined ? { require_second_factor: requireSecondFactor } : {}),
          });
          io.out(printed`Created group ${created.body.name} (id ${created.body.id}) in box "${await api.boxName()}".\n`);
        });
      case 'set':
        if (rest.length !== 1)
          throw usage('usage: boxauth group set <id|name> [--description <text>] [--require-second-factor true|false]');
        if (values.description === undefined && requireSecondFactor === undefined) {
          throw usage('nothing to change: give --description or --require-second-factor');
        }
        return withBox(io, async (api) => {
          const group = await findGroup(api, rest[0]!);
          const changed = await api.call<GroupRecord>('PUT', `/groups/${group.id}`, {
            ...(values.description !== undefined ? { description: values.description } : {}),
            ...(requireSecondFactor !== undefined ? { require_second_factor: requireSecondFactor } : {}),
          });
          printRecord(io, format, changed.body, GROUP_COLUMNS);
        });
      case 'members':
        if (rest.length !== 1) throw usage('usage: boxauth group members <id|name>');
        return withBox(io, async (api) => {
          const group = await findGroup(api, rest[0]!);
          // The API keeps memberships on the person (group-ids): the members are the people whose list holds the group.
          const members = (await allPages<UserRecord>(api, '/users')).filter((u) => u['group-ids'].includes(group.id));
          printList(io, format, members, MEMBER_COLUMNS);
        });
      case 'add-member':
      case 'remove-member': {
        if (rest.length < 2) throw usage(`usage: boxauth group ${sub} <id|name> <id|email>...`);
        const [ref, ...users] = rest as [string, ...string[]];
        return withBox(io, async (api) => {
          const group = await findGroup(api, ref);
          // Every user is found before any changes: a name that names nobody changes nothing.
          const found = [];
          for (const user of users) found.push(await findUser(api, user));
          // As user add-to-group: each person's list is read and written back whole.
          for (const user of found) {
            const now = user['group-ids'];
            await putGroups(io, api, user, sub === 'add-member' ? [...new Set([...now, group.id])] : now.filter((id) => id !== group.id));
          }
        });
      }
      case 'delete':
        if (rest.length !== 1) throw usage('usage: boxauth group delete <id|name>');
        return withBox(io, async (api) => {
          const group = await findGroup(api, rest[0]!);
          const deleted = await api.call<{ name: string }>('DELETE', `/groups/${group.id}`);
          io.out(printed`Deleted group ${deleted.body.name}.\n`);
        });
      default:
        throw usage(`unknown subcommand "group ${sub}"; see boxauth group help`);
    }
  },
};
