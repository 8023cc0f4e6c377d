// People's sessions from the shell: boxauth user sessions|end-sessions|vouch|unvouch (run by
// `user`, api/cli/commands/people.ts), and the columns of boxauth session list --grants|--browsers.
import type { BoxApi } from '../api.js';
import { usage, withBox, type Io } from '../command.js';
import { findUser, type UserRecord } from '../lookup.js';
import { printChange, printed, printList, printRecord, type ChangeFormat, type Column, type OutputFormat } from '../output.js';

/** A signed-in browser as /users/<id>/sessions and /sign-ins show it. */
export interface SignInRecord {
  sid: string;
  email?: string;
  since: string;
  expires_at: string;
  amr: string[];
  address: string | null;
  user_agent: string | null;
}

/** A grant to an app as /users/<id>/sessions and /grants show it. */
export interface GrantRecord {
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

export const WHO: Column<{ email?: string }> = { header: 'EMAIL', cell: (r) => r.email };

export const BROWSER_COLUMNS: Column<SignInRecord>[] = [
  { header: 'SID', cell: (b) => b.sid },
  { header: 'SINCE', cell: (b) => b.since },
  { header: 'FACTORS', cell: (b) => b.amr },
  { header: 'FROM', cell: (b) => b.address },
  { header: 'BROWSER', cell: (b) => b.user_agent },
];

export const GRANT_COLUMNS: Column<GrantRecord>[] = [
  { header: 'GRANT', cell: (g) => g.id },
  { header: 'CLIENT', cell: (g) => g.client },
  { header: 'SINCE', cell: (g) => g.since },
  { header: 'LAST_USED', cell: (g) => g.last_used },
  { header: 'FACTORS', cell: (g) => g.amr },
  { header: 'FROM', cell: (g) => g.address },
];

/** A person's sessions as GET /users/<id>/sessions shows them. */
export interface SessionsRecord {
  browsers: SignInRecord[];
  grants: GrantRecord[];
}

/** boxauth user sessions <id|email>: the person's signed-in browsers, then their grants. */
export async function showSessions(io: Io, format: OutputFormat, ref: string): Promise<void> {
  await withBox(io, async (api) => {
    const user = await findUser(api, ref);
    const found = (await api.call<SessionsRecord>('GET', `/users/${user.id}/sessions`)).body;
    if (format !== 'table') return printRecord(io, format, found, []);
    io.out(printed`Signed-in browsers of ${user.email} (id ${user.id}):\n`);
    printList(io, format, found.browsers, BROWSER_COLUMNS);
    io.out(printed`\nGrants to apps:\n`);
    printList(io, format, found.grants, GRANT_COLUMNS);
  });
}

/** boxauth user end-sessions <id|email> [--sid <sid> | --grant <id>]: all of them, one browser, or one grant. */
export async function endSessions(io: Io, format: ChangeFormat, ref: string, one: { sid?: string; grant?: string }): Promise<void> {
  if (one.sid !== undefined && one.grant !== undefined) throw usage('give --sid or --grant, not both');
  await withBox(io, async (api) => {
    const user = await findUser(api, ref);
    const box = await api.boxName();
    // The API answers 204: what -o prints is what was ended.
    const ended = {
      user: user.id,
      email: user.email,
      ...one,
      ended: one.sid !== undefined ? 'browser' : one.grant !== undefined ? 'grant' : 'all',
    };
    if (one.sid !== undefined) {
      await api.call('DELETE', `/users/${user.id}/sessions/${encodeURIComponent(one.sid)}`);
      return printChange(
        io,
        format,
        ended,
        printed`Signed ${user.email} out of browser ${one.sid} in box "${box}", with what was issued through it.\n`,
      );
    }
    if (one.grant !== undefined) {
      await api.call('DELETE', `/users/${user.id}/grants/${encodeURIComponent(one.grant)}`);
      return printChange(
        io,
        format,
        ended,
        printed`Ended grant ${one.grant} of ${user.email} in box "${box}": its access and refresh tokens stop working.\n`,
      );
    }
    await api.call('DELETE', `/users/${user.id}/sessions`);
    printChange(
      io,
      format,
      ended,
      printed`Ended every session of ${user.email} (id ${user.id}) in box "${box}": signed-in browsers, codes and tokens.\n`,
    );
  });
}

/** boxauth user vouch|unvouch <id|email>: the administrator's word on the address, audited by the box. */
export async function vouch(io: Io, format: ChangeFormat, ref: string, verified: boolean): Promise<void> {
  await withBox(io, async (api: BoxApi) => {
    const user = await findUser(api, ref);
    const changed = (await api.call<UserRecord>('PUT', `/users/${user.id}`, { email_verified: verified })).body;
    printChange(
      io,
      format,
      changed,
      verified
        ? printed`The box now vouches for ${changed.email} (id ${changed.id}): email_verified is true.\n`
        : printed`The box no longer vouches for ${changed.email} (id ${changed.id}): email_verified is false.\n`,
    );
  });
}
