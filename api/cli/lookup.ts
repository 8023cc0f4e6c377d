// Users and groups as a person names them: a user by id or email, a group by id or
// name. The API takes ids only; names are looked up first, so a name that does not
// exist stops the command before it changes anything.
import { CliError, type BoxApi } from './api.js';
import { allPages, usage } from './command.js';
import { printable } from './output.js';

export interface UserRecord {
  id: number;
  email: string;
  email_verified: boolean;
  /** Signed up where a proven address comes first, and not proven yet. */
  must_verify_email?: boolean;
  /** False: turned off (by an administrator or their directory); they cannot sign in. */
  active: boolean;
  data: string | null;
  status: unknown;
  'group-ids': number[];
  groups: { id: number; name: string }[];
}

export interface GroupRecord {
  id: number;
  name: string;
  description: string | null;
  /** Members enrol a second factor at their next sign-in. */
  require_second_factor: boolean;
  created_at: string;
}

const ID = /^\d{1,15}$/;

/** The whole record of the user named by `ref`: an id, or an email (any case, as the box compares them). */
export async function findUser(api: BoxApi, ref: string): Promise<UserRecord> {
  let id = ref;
  if (!ID.test(ref)) {
    if (!ref.includes('@')) throw usage(`"${printable(ref)}" is neither a user id nor an email address`);
    const [found] = (await api.call<UserRecord[]>('GET', `/users?${new URLSearchParams({ email: ref })}`)).body;
    if (!found) throw new CliError(`no user with email ${printable(ref)} (see boxauth user list)`);
    id = String(found.id);
  }
  // A box of an older release still sent the password hash in one user's record: never shown.
  const { password: _hash, ...user } = (await api.call<UserRecord & { password?: unknown }>('GET', `/users/${id}`)).body;
  return user;
}

/** The group named by `ref`: an id, or a name (any case). */
export async function findGroup(api: BoxApi, ref: string): Promise<GroupRecord> {
  if (ID.test(ref)) return (await api.call<GroupRecord>('GET', `/groups/${ref}`)).body;
  const [id] = await groupIds(api, [ref]);
  return (await api.call<GroupRecord>('GET', `/groups/${id}`)).body;
}

/**
 * The ids of groups given by id or by name (a name of digits only reads as an id). Ids go
 * to the box as they are: it refuses one that names no group (422, and writes nothing).
 */
export async function groupIds(api: BoxApi, refs: string[]): Promise<number[]> {
  const names = refs.filter((ref) => !ID.test(ref));
  const byName = new Map<string, number>();
  if (names.length) {
    // One search for all the names: a parameter given several times matches any of its values.
    const query = new URLSearchParams(names.map((name) => ['name', name]));
    for (const group of await allPages<GroupRecord>(api, `/groups?${query}`)) byName.set(group.name.toLowerCase(), group.id);
  }
  const ids = refs.map((ref) => {
    if (ID.test(ref)) return Number(ref);
    const id = byName.get(ref.toLowerCase());
    if (id === undefined) throw new CliError(`no group named "${printable(ref)}" (see boxauth group list); nothing changed`);
    return id;
  });
  return [...new Set(ids)];
}
