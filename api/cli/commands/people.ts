// boxauth user … and boxauth group …: the seed's verbs (user new, list, help) and kubectl's
// (get, describe, create, apply -f, edit, delete), and what only people have (passwords, groups,
// factors, sessions, identities).
import { isDeepStrictEqual } from 'node:util';
import { errorMessage } from '../../errors.js';
import { readYaml } from '../../yaml.js';
import { CliError, type BoxApi } from '../api.js';
import {
  allPages,
  asking,
  flag,
  OUTPUT,
  text,
  texts,
  usage,
  withBox,
  type Command,
  type CommandSpec,
  type Given,
  type Io,
} from '../command.js';
import { describeText } from '../describe.js';
import { editedRecord } from '../edit.js';
import { findGroup, findUser, groupIds, type GroupRecord, type UserRecord } from '../lookup.js';
import { readInput } from './resources.js';
import { BROWSER_COLUMNS, endSessions, GRANT_COLUMNS, showSessions, vouch, type SessionsRecord } from './people-sessions.js';
import {
  changeFormat,
  outputFormat,
  printChange,
  printed,
  printList,
  printRecord,
  table as tableText,
  type ChangeFormat,
  type Column,
} from '../output.js';

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

/** Replaces the user's groups, and says which they are now (or, -o, prints the user as written). */
async function putGroups(io: Io, format: ChangeFormat | 'quiet', api: BoxApi, user: UserRecord, ids: number[]): Promise<UserRecord> {
  const changed = (await api.call<UserRecord>('PUT', `/users/${user.id}`, { 'group-ids': ids })).body;
  const names = changed.groups.map((g) => g.name).sort();
  if (format !== 'quiet')
    printChange(io, format, changed, printed`${changed.email} is now in ${names.length ? names.join(', ') : 'no group'}.\n`);
  return changed;
}

/** Turns the user off or on (PUT active): off ends everything they obtained, as the box's API does. */
async function setActive(io: Io, format: ChangeFormat, ref: string, active: boolean): Promise<void> {
  await withBox(io, async (api) => {
    const user = await findUser(api, ref);
    const changed = (await api.call<UserRecord>('PUT', `/users/${user.id}`, { active })).body;
    const box = await api.boxName();
    printChange(
      io,
      format,
      changed,
      active
        ? printed`Turned ${changed.email} (id ${changed.id}) on in box "${box}": they may sign in again.\n`
        : printed`Turned ${changed.email} (id ${changed.id}) off in box "${box}": they cannot sign in, ` +
            'and their signed-in browsers, codes and tokens were ended.\n',
    );
  });
}

async function createUser(io: Io, format: ChangeFormat, email: string, password: string, data: string | undefined, groups: string[]) {
  await withBox(io, async (api) => {
    const body: Record<string, unknown> = {
      email,
      password,
      ...(data !== undefined ? { data } : {}),
      ...(groups.length ? { 'group-ids': await groupIds(api, groups) } : {}),
    };
    const created = await api.call<{ id: number; email: string; email_verified: boolean }>('POST', '/users', body);
    const verified = created.body.email_verified ? 'email verified' : 'email not verified';
    printChange(
      io,
      format,
      created.body,
      printed`Created user ${created.body.email} (id ${created.body.id}, ${verified}) in box "${await api.boxName()}" (${api.target.url}).\n`,
    );
  });
}

/** What edit shows of a user: the fields PUT /users/<id> takes (the password has its own verb, set-password). */
function editableUser(user: UserRecord): Record<string, unknown> {
  return { email: user.email, email_verified: user.email_verified, active: user.active, data: user.data, 'group-ids': user['group-ids'] };
}

/** The records of a people file (YAML or JSON, one or many documents, or arrays), each an object. */
function peopleRecords(file: string, what: string): Record<string, unknown>[] {
  const input = readInput(file);
  let values: unknown[];
  try {
    values = readYaml(input);
  } catch (err) {
    throw usage(`${file}: ${errorMessage(err)}`);
  }
  const records = values.flatMap((v) => (Array.isArray(v) ? v : [v])).filter((v) => v !== null && v !== undefined);
  if (!records.length) throw usage(`${file}: no ${what} in it`);
  for (const r of records) if (typeof r !== 'object' || Array.isArray(r)) throw usage(`${file}: expected ${what} objects`);
  return records as Record<string, unknown>[];
}

/** Prints what apply wrote: a line each, or (-o) the record, or the list of them. */
function printApplied(io: Io, format: ChangeFormat, written: unknown[], lines: string[]): void {
  if (format === 'line') return io.out(lines.join(''));
  printChange(io, format, written.length === 1 ? written[0] : written, '');
}

/**
 * user apply -f: each user by id, else by email, is changed with the fields the file gives
 * (as PUT /users/<id> does), or created when no user has that email (then it needs a password).
 */
async function applyUsers(io: Io, given: Given): Promise<void> {
  const file = text(given.values, 'filename')!;
  const format = changeFormat(given.values);
  const records = peopleRecords(file, 'user');
  await withBox(io, async (api) => {
    const written: unknown[] = [];
    const lines: string[] = [];
    for (const { id, ...fields } of records) {
      const ref = id !== undefined ? String(id) : typeof fields.email === 'string' ? fields.email : undefined;
      if (ref === undefined) throw usage(`${file}: every user needs an id or an email`);
      const found =
        id !== undefined
          ? await findUser(api, ref)
          : (await api.call<UserRecord[]>('GET', `/users?${new URLSearchParams({ email: ref })}`)).body[0];
      try {
        const res = found
          ? await api.call<UserRecord>('PUT', `/users/${found.id}`, fields)
          : await api.call<UserRecord>('POST', '/users', fields);
        written.push(res.body);
        lines.push(printed`user/${res.body.email} ${!found ? 'created' : sameUser(found, res.body) ? 'unchanged' : 'configured'}\n`);
      } catch (err) {
        throw new CliError(`user/${ref}: ${errorMessage(err)}`);
      }
    }
    printApplied(io, format, written, lines);
  });
}

/** Whether the user a PUT answered with is the one it found: what a listing shows of them is the same (a password kept is not shown). */
function sameUser(found: UserRecord, written: UserRecord): boolean {
  return Object.keys(found).every((key) => isDeepStrictEqual(found[key as keyof UserRecord], written[key as keyof UserRecord]));
}

/** user describe: the person, their groups, factors, sessions and identities. */
async function describeUser(io: Io, ref: string): Promise<void> {
  await withBox(io, async (api) => {
    const { groups, 'group-ids': _ids, ...user } = await findUser(api, ref);
    const [factors, sessions, identities] = await Promise.all([
      api.call<FactorsRecord>('GET', `/users/${user.id}/factors`),
      api.call<SessionsRecord>('GET', `/users/${user.id}/sessions`),
      api.call<IdentityRecord[]>('GET', `/users/${user.id}/identities`),
    ]);
    const f = factors.body;
    io.out(
      describeText(`User ${user.email}`, user, [
        ['Groups', groups.length ? groups.map((g) => g.name).join(', ') : 'none'],
        ['Second factors', f.factors.length ? f.factors.map((x) => `${x.kind} "${x.name}"`).join(', ') : 'none'],
        ['Recovery codes left', String(f.recovery_codes_left)],
        ['Must enrol a factor', String(f.must_enrol)],
        ['Signed-in browsers', sessions.body.browsers.length ? tableText(sessions.body.browsers, BROWSER_COLUMNS) : 'none'],
        ['Grants to apps', sessions.body.grants.length ? tableText(sessions.body.grants, GRANT_COLUMNS) : 'none'],
        ['Identities', identities.body.length ? tableText(identities.body, IDENTITY_COLUMNS) : 'none'],
      ]),
    );
  });
}

const USER_SPEC: CommandSpec = {
  name: 'user',
  aliases: ['users'],
  summary: 'list, create and change the users of the current box',
  about: 'A user is named by id or email, a group by id or name (a name of digits only reads as an id).',
  options: {
    group: { type: 'string', multiple: true, usage: '--group <name|id>', summary: 'a group to join (repeatable)' },
    data: { type: 'string', usage: "--data '<json>'", summary: "the user's data (profile claims), as JSON text" },
    filename: { type: 'string', short: 'f', usage: '-f, --filename <file>', summary: 'a YAML or JSON file of users ("-": stdin)' },
    'password-stdin': { type: 'boolean', summary: 'the password is stdin (one trailing newline dropped)' },
    sid: { type: 'string', usage: '--sid <sid>', summary: 'end only this signed-in browser, and what was issued through it' },
    grant: { type: 'string', usage: '--grant <id>', summary: 'end only this grant to an app' },
    output: OUTPUT,
  },
  verbs: {
    help: { summary: 'this list' },
    list: {
      summary: 'the users of the current box (email_verified: whether apps and Kubernetes are told the box vouches for the address)',
      options: ['output'],
    },
    get: { args: '<id|email>', count: [1, 1], summary: 'one user (never its password hash)', options: ['output'] },
    describe: { args: '<id|email>', count: [1, 1], summary: 'one user in words: groups, factors, sessions and identities' },
    new: {
      count: [0, 1],
      aliases: ['create'],
      summary: 'asks for Email and Password (not echoed), then creates the user',
      more: [['new <email>:<password>', "creates the user inline (the password may contain ':')"]],
      options: ['group', 'data', 'output'],
    },
    apply: {
      args: '-f <file>',
      summary: 'change the users of a file (by id, else email) with the fields it gives, or create those not there (with a password)',
      options: ['filename', 'output'],
    },
    edit: {
      args: '<id|email>',
      count: [1, 1],
      summary: 'open the user (email, email_verified, active, data, group-ids) in $EDITOR, then put it back as saved',
      options: ['output'],
    },
    'set-password': {
      args: '<id|email>',
      count: [1, 1],
      summary:
        "asks for the new password twice (not echoed); --password-stdin reads it from stdin instead. The box then ends the user's sessions: signed-in browsers, codes, and every token",
      options: ['password-stdin', 'output'],
    },
    'add-to-group': { args: '<id|email> <group>...', count: [2, Infinity], summary: 'adds the user to the groups', options: ['output'] },
    'remove-from-group': {
      args: '<id|email> <group>...',
      count: [2, Infinity],
      summary: 'takes the user out of the groups',
      options: ['output'],
    },
    'set-groups': {
      args: '<id|email> <group>...',
      count: [2, Infinity],
      summary: "makes these the user's only groups",
      options: ['output'],
    },
    delete: { args: '<id|email>', count: [1, 1], summary: 'deletes a user and closes their sessions', options: ['output'] },
    factors: {
      args: '<id|email>',
      count: [1, 1],
      summary: "the user's second factors (passkeys, TOTP), recovery codes left, and whether they must enrol one",
      options: ['output'],
    },
    'reset-factors': {
      args: '<id|email>',
      count: [1, 1],
      summary:
        'removes every second factor and recovery code of the user (a lost phone, a stolen passkey): they enrol a new one at their next sign-in, and their signed-in browsers, codes and tokens end',
      options: ['output'],
    },
    sessions: {
      args: '<id|email>',
      count: [1, 1],
      summary: "the user's signed-in browsers and grants to apps: since when, from where, which factors, which client",
      options: ['output'],
    },
    'end-sessions': {
      args: '<id|email>',
      count: [1, 1],
      summary:
        'signs the user out everywhere: browsers, codes and tokens end; --sid <sid>: one signed-in browser and what was issued through it; --grant <id>: one grant to an app (access and refresh token)',
      options: ['sid', 'grant', 'output'],
    },
    vouch: {
      args: '<id|email>',
      count: [1, 1],
      summary: "the box vouches for the user's address (email_verified true, audited as the administrator's word; no link is needed)",
      options: ['output'],
    },
    unvouch: { args: '<id|email>', count: [1, 1], summary: 'the box no longer vouches for it (email_verified false)', options: ['output'] },
    disable: {
      args: '<id|email>',
      count: [1, 1],
      summary: 'turns the user off (active false): they cannot sign in, and their signed-in browsers, codes and tokens end at once',
      options: ['output'],
    },
    enable: { args: '<id|email>', count: [1, 1], summary: 'turns the user on again (active true): they may sign in', options: ['output'] },
    identities: {
      args: '<id|email>',
      count: [1, 1],
      summary: "the user's identities at upstream providers (which provider, the subject there, since when, last used)",
      options: ['output'],
    },
    unlink: {
      args: '<id|email> <provider>',
      count: [2, 2],
      summary: "unlinks the user's identity at that provider: it no longer signs them in (even when it was their only way in)",
      options: ['output'],
    },
  },
  notes: 'A group filter of the list is `boxauth group members <group>`.',
};

export const userCommand: Command = {
  spec: USER_SPEC,
  async run(given, io) {
    const { verb, values } = given;
    const rest = given.args;
    const ref = rest[0]!;
    switch (verb) {
      case 'help':
        throw usage('help takes no arguments');
      case 'list': {
        const format = outputFormat(values, io);
        return withBox(io, async (api) => printList(io, format, await allPages<UserRecord>(api, '/users'), USER_COLUMNS));
      }
      case 'new': {
        const format = changeFormat(values);
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
        return createUser(io, format, email, password, text(values, 'data'), texts(values, 'group'));
      }
      case 'get': {
        const format = outputFormat(values, io);
        return withBox(io, async (api) => {
          printRecord(io, format, await findUser(api, ref), USER_COLUMNS);
        });
      }
      case 'describe':
        return describeUser(io, ref);
      case 'apply':
        if (!text(values, 'filename')) throw usage('usage: boxauth user apply -f <file>');
        return applyUsers(io, given);
      case 'edit': {
        const format = changeFormat(values);
        return withBox(io, async (api) => {
          const user = await findUser(api, ref);
          const edited = editedRecord(io, editableUser(user), `user-${user.id}`);
          if (edited === undefined) return io.out(printed`user/${user.email} unchanged (nothing edited)\n`);
          const changed = (await api.call<UserRecord>('PUT', `/users/${user.id}`, edited)).body;
          printChange(io, format, changed, printed`user/${changed.email} edited\n`);
        });
      }
      case 'set-password': {
        const format = changeFormat(values);
        return withBox(io, async (api) => {
          const user = await findUser(api, ref);
          const password = await newPassword(io, flag(values, 'password-stdin'));
          const changed = await api.call('PUT', `/users/${user.id}`, { password });
          printChange(
            io,
            format,
            changed.body,
            printed`Password of ${user.email} (id ${user.id}) changed in box "${await api.boxName()}"; ` +
              'their signed-in browsers, codes and tokens were ended: they sign in again with the new password.\n',
          );
        });
      }
      // These read the user's groups and write them back whole (PUT takes the full list):
      // a membership changed by someone else in between is overwritten.
      case 'add-to-group':
      case 'remove-from-group':
      case 'set-groups': {
        const format = changeFormat(values);
        const groups = rest.slice(1);
        return withBox(io, async (api) => {
          const user = await findUser(api, ref);
          const ids = await groupIds(api, groups);
          const now = user['group-ids'];
          const wanted: Record<typeof verb, number[]> = {
            'add-to-group': [...new Set([...now, ...ids])],
            'remove-from-group': now.filter((id) => !ids.includes(id)),
            'set-groups': ids,
          };
          await putGroups(io, format, api, user, wanted[verb]);
        });
      }
      case 'factors': {
        const format = outputFormat(values, io);
        return withBox(io, async (api) => {
          const user = await findUser(api, ref);
          const found = (await api.call<FactorsRecord>('GET', `/users/${user.id}/factors`)).body;
          if (format !== 'table') return printRecord(io, format, found, []);
          printList(io, format, found.factors, FACTOR_COLUMNS);
          io.out(factorRules(user, found));
        });
      }
      case 'reset-factors': {
        const format = changeFormat(values);
        return withBox(io, async (api) => {
          const user = await findUser(api, ref);
          const res = await api.call('POST', `/users/${user.id}/factors/reset`);
          printChange(
            io,
            format,
            res.body,
            printed`Second factors of ${user.email} (id ${user.id}) reset in box "${await api.boxName()}": ` +
              'their signed-in browsers, codes and tokens were ended, and they enrol a new factor at their next sign-in.\n',
          );
        });
      }
      case 'sessions':
        return showSessions(io, outputFormat(values, io), ref);
      case 'end-sessions':
        return endSessions(io, changeFormat(values), ref, {
          ...(text(values, 'sid') !== undefined ? { sid: text(values, 'sid')! } : {}),
          ...(text(values, 'grant') !== undefined ? { grant: text(values, 'grant')! } : {}),
        });
      case 'vouch':
      case 'unvouch':
        return vouch(io, changeFormat(values), ref, verb === 'vouch');
      case 'disable':
      case 'enable':
        return setActive(io, changeFormat(values), ref, verb === 'enable');
      case 'identities': {
        const format = outputFormat(values, io);
        return withBox(io, async (api) => {
          const user = await findUser(api, ref);
          printList(io, format, (await api.call<IdentityRecord[]>('GET', `/users/${user.id}/identities`)).body, IDENTITY_COLUMNS);
        });
      }
      case 'unlink': {
        const format = changeFormat(values);
        const provider = rest[1]!;
        return withBox(io, async (api) => {
          const user = await findUser(api, ref);
          await api.call('DELETE', `/users/${user.id}/identities/${encodeURIComponent(provider)}`);
          printChange(
            io,
            format,
            { user: user.id, email: user.email, provider, unlinked: true },
            printed`Unlinked ${user.email} (id ${user.id}) from ${provider}: that identity no longer signs them in.\n`,
          );
        });
      }
      case 'delete': {
        const format = changeFormat(values);
        return withBox(io, async (api) => {
          const user = await findUser(api, ref);
          const deleted = await api.call<{ email: string }>('DELETE', `/users/${user.id}`);
          printChange(io, format, deleted.body, printed`Deleted user ${deleted.body.email} from box "${await api.boxName()}".\n`);
        });
      }
      default:
        throw usage(`unknown subcommand "user ${verb}"; see boxauth user help`);
    }
  },
};

const GROUP_SPEC: CommandSpec = {
  name: 'group',
  aliases: ['groups'],
  summary: 'list and create groups, and change their members',
  options: {
    description: { type: 'string', usage: '--description <text>', summary: "the group's description" },
    'require-second-factor': {
      type: 'string',
      usage: '--require-second-factor true|false',
      summary: 'members must have a second factor (they enrol one at their next sign-in)',
      values: ['true', 'false'],
    },
    filename: { type: 'string', short: 'f', usage: '-f, --filename <file>', summary: 'a YAML or JSON file of groups ("-": stdin)' },
    output: OUTPUT,
  },
  verbs: {
    list: { summary: 'the groups of the current box', options: ['output'] },
    get: { args: '<id|name>', count: [1, 1], summary: 'one group', options: ['output'] },
    describe: { args: '<id|name>', count: [1, 1], summary: 'one group in words, with its members' },
    new: {
      args: '<name>',
      count: [1, 1],
      aliases: ['create'],
      summary: 'creates a group',
      options: ['description', 'require-second-factor', 'output'],
    },
    apply: {
      args: '-f <file>',
      summary: 'change the groups of a file (by id, else name) with the fields it gives, or create those not there',
      options: ['filename', 'output'],
    },
    edit: { args: '<id|name>', count: [1, 1], summary: 'open the group in $EDITOR, then put it back as saved', options: ['output'] },
    set: {
      args: '<id|name>',
      count: [1, 1],
      summary: 'changes a group (only what it is given)',
      options: ['description', 'require-second-factor', 'output'],
    },
    delete: { args: '<id|name>', count: [1, 1], summary: 'deletes a group (its members stay, without it)', options: ['output'] },
    members: { args: '<id|name>', count: [1, 1], summary: "the group's members (id, email, whether turned on)", options: ['output'] },
    'add-member': { args: '<id|name> <id|email>...', count: [2, Infinity], summary: 'adds the users to the group', options: ['output'] },
    'remove-member': {
      args: '<id|name> <id|email>...',
      count: [2, Infinity],
      summary: 'takes the users out of the group',
      options: ['output'],
    },
  },
};

/** The people whose list of groups holds the group: the API keeps memberships on the person (group-ids). */
async function membersOf(api: BoxApi, group: GroupRecord): Promise<UserRecord[]> {
  return (await allPages<UserRecord>(api, '/users')).filter((u) => u['group-ids'].includes(group.id));
}

/** group apply -f: each group by id, else by name, changed with the fields the file gives, or created. */
async function applyGroups(io: Io, given: Given): Promise<void> {
  const file = text(given.values, 'filename')!;
  const format = changeFormat(given.values);
  const records = peopleRecords(file, 'group');
  await withBox(io, async (api) => {
    const written: unknown[] = [];
    const lines: string[] = [];
    for (const { id, created_at: _created, ...fields } of records) {
      const ref = id !== undefined ? String(id) : typeof fields.name === 'string' ? fields.name : undefined;
      if (ref === undefined) throw usage(`${file}: every group needs an id or a name`);
      let found: GroupRecord | undefined;
      if (id !== undefined) found = await findGroup(api, ref);
      else
        found = (await allPages<GroupRecord>(api, `/groups?${new URLSearchParams({ name: ref })}`)).find(
          (g) => g.name.toLowerCase() === ref.toLowerCase(),
        );
      try {
        const res = found
          ? await api.call<GroupRecord>('PUT', `/groups/${found.id}`, fields)
          : await api.call<GroupRecord>('POST', '/groups', fields);
        written.push(res.body);
        lines.push(printed`group/${res.body.name} ${found ? 'configured' : 'created'}\n`);
      } catch (err) {
        throw new CliError(`group/${ref}: ${errorMessage(err)}`);
      }
    }
    printApplied(io, format, written, lines);
  });
}

export const groupCommand: Command = {
  spec: GROUP_SPEC,
  async run(given, io) {
    const { verb, values } = given;
    const rest = given.args;
    const ref = rest[0]!;
    const description = text(values, 'description');
    const requireSecondFactor = requireFlag(text(values, 'require-second-factor'));
    switch (verb) {
      case 'list': {
        const format = outputFormat(values, io);
        return withBox(io, async (api) => printList(io, format, await allPages<GroupRecord>(api, '/groups'), GROUP_COLUMNS));
      }
      case 'get': {
        const format = outputFormat(values, io);
        return withBox(io, async (api) => printRecord(io, format, await findGroup(api, ref), GROUP_COLUMNS));
      }
      case 'describe':
        return withBox(io, async (api) => {
          const group = await findGroup(api, ref);
          const members = await membersOf(api, group);
          io.out(
            describeText(`Group ${group.name}`, { ...group }, [['Members', members.length ? tableText(members, MEMBER_COLUMNS) : 'none']]),
          );
        });
      case 'new': {
        const format = changeFormat(values);
        return withBox(io, async (api) => {
          const created = await api.call<GroupRecord>('POST', '/groups', {
            name: ref,
            description: description ?? null,
            ...(requireSecondFactor !== undefined ? { require_second_factor: requireSecondFactor } : {}),
          });
          printChange(
            io,
            format,
            created.body,
            printed`Created group ${created.body.name} (id ${created.body.id}) in box "${await api.boxName()}".\n`,
          );
        });
      }
      case 'apply':
        if (!text(values, 'filename')) throw usage('usage: boxauth group apply -f <file>');
        return applyGroups(io, given);
      case 'edit': {
        const format = changeFormat(values);
        return withBox(io, async (api) => {
          const group = await findGroup(api, ref);
          const { id, created_at: _created, ...fields } = group;
          const edited = editedRecord(io, fields, `group-${id}`);
          if (edited === undefined) return io.out(printed`group/${group.name} unchanged (nothing edited)\n`);
          const changed = (await api.call<GroupRecord>('PUT', `/groups/${id}`, edited)).body;
          printChange(io, format, changed, printed`group/${changed.name} edited\n`);
        });
      }
      case 'set':
        if (description === undefined && requireSecondFactor === undefined) {
          throw usage('nothing to change: give --description or --require-second-factor');
        }
        return withBox(io, async (api) => {
          const group = await findGroup(api, ref);
          const changed = await api.call<GroupRecord>('PUT', `/groups/${group.id}`, {
            ...(description !== undefined ? { description } : {}),
            ...(requireSecondFactor !== undefined ? { require_second_factor: requireSecondFactor } : {}),
          });
          // As before -o was read for changes: the record, as a table on a terminal, else JSON.
          printRecord(io, outputFormat(values, io), changed.body, GROUP_COLUMNS);
        });
      case 'members': {
        const format = outputFormat(values, io);
        return withBox(io, async (api) => printList(io, format, await membersOf(api, await findGroup(api, ref)), MEMBER_COLUMNS));
      }
      case 'add-member':
      case 'remove-member': {
        const format = changeFormat(values);
        return withBox(io, async (api) => {
          const group = await findGroup(api, ref);
          // Every user is found before any changes: a name that names nobody changes nothing.
          const found = [];
          for (const user of rest.slice(1)) found.push(await findUser(api, user));
          // As user add-to-group: each person's list is read and written back whole.
          const written = [];
          for (const user of found) {
            const now = user['group-ids'];
            const ids = verb === 'add-member' ? [...new Set([...now, group.id])] : now.filter((id) => id !== group.id);
            written.push(await putGroups(io, format === 'line' ? 'line' : 'quiet', api, user, ids));
          }
          if (format !== 'line') printChange(io, format, written.length === 1 ? written[0] : written, '');
        });
      }
      case 'delete': {
        const format = changeFormat(values);
        return withBox(io, async (api) => {
          const group = await findGroup(api, ref);
          const deleted = await api.call<GroupRecord>('DELETE', `/groups/${group.id}`);
          printChange(io, format, deleted.body, printed`Deleted group ${deleted.body.name}.\n`);
        });
      }
      default:
        throw usage(`unknown subcommand "group ${verb}"; see boxauth group help`);
    }
  },
};
