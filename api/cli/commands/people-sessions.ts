// People's sessions from the shell: boxauth user sessions|end-sessions|vouch|unvouch
// (run by `user`, api/cli/commands/people.ts) and boxauth sessions (the box's).
import type { BoxApi } from '../api.js';
import { allPages, parse, usage, withBox, type Command, type Io } from '../command.js';
import { findUser, type UserRecord } from '../lookup.js';
import { outputHelp, OUTPUT_OPTION, outputFormat, printed, printList, printRecord, type Column, type OutputFormat } from '../output.js';

/** A signed-in browser as /users/<id>/sessions and /sign-ins show it. */
interface SignInRecord {
  sid: string;
  email?: string;
  since: string;
  expires_at: string;
  amr: string[];
  address: string | null;
  user_agent: string | null;
}

/** A grant to an app as /users/<id>/sessions and /grants show it. */
interface GrantRecord {
  id: string;
  email?: string;
  client: string;
  since: string;
  last_used: string;
  scope: string | null;
  amr: string[];
  sid: string | null;
  address: string | null;
}

const WHO: Column<{ email?: string }> = { header: 'EMAIL', cell: (r) => r.email };

const BROWSER_COLUMNS: Column<SignInRecord>[] = [
  { header: 'SID', cell: (b) => b.sid },
  { header: 'SINCE', cell: (b) => b.since },
  { header: 'FACTORS', cell: (b) => b.amr },
  { header: 'FROM', cell: (b) => b.address },
  { header: 'BROWSER', cell: (b) => b.user_agent },
];

const GRANT_COLUMNS: Column<GrantRecord>[] = [
  { header: 'GRANT', cell: (g) => g.id },
  { header: 'CLIENT', cell: (g) => g.client },
  { header: 'SINCE', cell: (g) => g.since },
  { header: 'LAST_USED', cell: (g) => g.last_used },
  { header: 'FACTORS', cell: (g) => g.amr },
  { header: 'FROM', cell: (g) => g.address },
];

/** boxauth user sessions <id|email>: the person's signed-in browsers, then their grants. */
export async function showSessions(io: Io, format: OutputFormat, ref: string): Promise<void> {
  await withBox(io, async (api) => {
    const user = await findUser(api, ref);
    const found = (await api.call<{ browsers: SignInRecord[]; grants: GrantRecord[] }>('GET', `/users/${user.id}/sessions`)).body;
    if (format !== 'table') return printRecord(io, format, found, []);
    io.out(printed`Signed-in browsers of ${user.email} (id ${user.id}):\n`);
    printList(io, format, found.browsers, BROWSER_COLUMNS);
    io.out(printed`\nGrants to apps:\n`);
    printList(io, format, found.grants, GRANT_COLUMNS);
  });
}

/** boxauth user end-sessions <id|email> [--sid <sid> | --grant <id>]: all of them, one browser, or one grant. */
export async function endSessions(io: Io, ref: string, one: { sid?: string; grant?: string }): Promise<void> {
  if (one.sid !== undefined && one.grant !== undefined) throw usage('give --sid or --grant, not both');
  await withBox(io, async (api) => {
    const user = await findUser(api, ref);
    const box = await api.boxName();
    if (one.sid !== undefined) {
      await api.call('DELETE', `/users/${user.id}/sessions/${encodeURIComponent(one.sid)}`);
      return io.out(printed`Signed ${user.email} out of browser ${one.sid} in box "${box}", with what was issued through it.\n`);
    }
    if (one.grant !== undefined) {
      await api.call('DELETE', `/users/${user.id}/grants/${encodeURIComponent(one.grant)}`);
      return io.out(printed`Ended grant ${one.grant} of ${user.email} in box "${box}": its access and refresh tokens stop working.\n`);
    }
    await api.call('DELETE', `/users/${user.id}/sessions`);
    io.out(printed`Ended every session of ${user.email} (id ${user.id}) in box "${box}": signed-in browsers, codes and tokens.\n`);
  });
}

/** boxauth user vouch|unvouch <id|email>: the administrator's word on the address, audited by the box. */
export async function vouch(io: Io, ref: string, verified: boolean): Promise<void> {
  await withBox(io, async (api: BoxApi) => {
    const user = await findUser(api, ref);
    const changed = (await api.call<UserRecord>('PUT', `/users/${user.id}`, { email_verified: verified })).body;
    io.out(
      verified
        ? printed`The box now vouches for ${changed.email} (id ${changed.id}): email_verified is true.\n`
        : printed`The box no longer vouches for ${changed.email} (id ${changed.id}): email_verified is false.\n`,
    );
  });
}

const SESSIONS_HELP = `Usage: boxauth sessions [--filter <part of email>] [--client <id>] [--browsers]

People's live grants to apps in the current box, newest first: who, which client, since when,
when last refreshed, which factors the sign-in proved, and where it signed in from. End one with
boxauth user end-sessions <email> --grant <id>. (boxauth session lists every session record,
clients' own too.)

Options:
  --filter <text>                    only people whose email holds this (any case)
  --client <id>                      only grants to this client
  --browsers                         signed-in browsers instead of grants (--client does not apply)
${outputHelp(37, 'the list')}
`;

export const sessionsCommand: Command = {
  name: 'sessions',
  summary: "people's live grants and signed-in browsers, filtered by email or client",
  help: SESSIONS_HELP,
  async run(args, io) {
    const { values, positionals } = parse(args, {
      filter: { type: 'string' },
      client: { type: 'string' },
      browsers: { type: 'boolean' },
      ...OUTPUT_OPTION,
      help: { type: 'boolean', short: 'h' },
    });
    if (values.help || positionals[0] === 'help') return io.out(SESSIONS_HELP);
    if (positionals.length) throw usage(`boxauth sessions takes no arguments ("${positionals[0]}"); see boxauth sessions help`);
    if (values.browsers && values.client !== undefined) throw usage('--client lists grants; signed-in browsers belong to no client');
    const format = outputFormat(values.output, io);
    const query = new URLSearchParams();
    if (values.filter) query.set('q', values.filter);
    if (values.client !== undefined) query.set('client', values.client);
    const path = `${values.browsers ? '/sign-ins' : '/grants'}${query.size ? `?${query}` : ''}`;
    await withBox(io, async (api) => {
      if (values.browsers) return printList(io, format, await allPages<SignInRecord>(api, path), [WHO, ...BROWSER_COLUMNS]);
      printList(io, format, await allPages<GrantRecord>(api, path), [WHO, ...GRANT_COLUMNS]);
    });
  },
};
