// The SCIM operations carried out on the box's people and groups (docs/architecture.md §12: a door onto
// the same records, not a second store). People change through api/people/accounts.ts, as the
// REST API's do: a new password or active=false ends what the person obtained, in the
// transaction of the change. A PUT or PATCH is read, checked against If-Match and written under
// the record's lock, so that two directories' writes (or Entra ID's parallel member adds) are
// ruled on one after the other and none is lost.
//
// A person whose address was never proven (store/users.ts addressNeverProven: a sign-up, a person
// made at a provider not trusted for emails, an address taken on the account page of a box
// without mail) is nobody to a directory (docs/architecture.md §12: nobody adopts such an account). A
// filter never matches them, their id is 404 and no member of a group, and a userName of theirs
// is 409 uniqueness: else the directory's search for a new hire finds the stranger who signed up
// with the hire's address first, and its writes vouch for the stranger's password.
//
// A person is named by their SCIM id, their public sub (./resources.ts scimId), and read back as
// every presented sub is (api/credentials/presented-subjects.ts): on a box of opaque subs, a row
// id or a client's pairwise sub names nobody, as an id never given does.
import type { Actor } from '../../audit.js';
import { peopleOfSubjects, personOfSubject } from '../../credentials/presented-subjects.js';
import { dummyHash, type Argon2 } from '../../credentials/secrets.js';
import type { SubjectSettings } from '../../credentials/subjects.js';
import { withTransaction, type Transaction } from '../../db/pool.js';
import { isReserved, reservedRecords } from '../../reserved.js';
import { isEmailAddress } from '../../schema/people.js';
import { passwordCheck, type PasswordCheck } from '../../schema/password-policy.js';
import type { Config } from '../../config.js';
import { ConstraintViolation } from '../../store/constraints.js';
import {
  changeMembers,
  createGroup,
  deleteGroup,
  getGroup,
  getGroups,
  lockGroup,
  membersOf,
  updateGroup,
  type GroupRow,
} from '../../store/groups.js';
import { searchScim, SearchTooCostly, type ScimFilter, type ScimPage } from '../../store/scim-search.js';
import {
  addressNeverProven,
  findUserByEmail,
  getUser,
  getUsers,
  unknownToDirectory,
  type UserFields,
  type UserRow,
} from '../../store/users.js';
import { changeAccount, createAccount, removeAccount, type AccountServices } from '../accounts.js';
import { ScimError, invalidValue, notFound } from './errors.js';
import { applyPatch, type Json } from './patch.js';
import { DIRECTORY, groupResource, readGroup, readUser, userResource, type UserWrite } from './resources.js';
import { RESOURCE_TYPES } from './schemas.js';

export type ScimServices = AccountServices & {
  config: AccountServices['config'] & Pick<Config, 'rootClientId' | 'passwordMinLength' | 'box'>;
  subjects: SubjectSettings;
  argon2: Argon2;
};

/** A write's preconditions: the ETag it was made against (If-Match, RFC 7644 §3.14). */
export interface Precondition {
  ifMatch?: string | undefined;
}

function checkVersion(current: Json, pre: Precondition): void {
  if (pre.ifMatch === undefined || pre.ifMatch.trim() === '*') return;
  const version = (current.meta as { version: string }).version;
  const asked = pre.ifMatch.split(',').map((v) => v.trim());
  // Weak comparison (RFC 9110 §8.8.3.2): W/"x" and "x" name the same version.
  const bare = (v: string): string => v.replace(/^W\//, '');
  if (!asked.some((v) => bare(v) === bare(version)))
    throw new ScimError(412, undefined, `the resource changed since version ${asked.join(', ')}: it is ${version} now`);
}

/** Turns the store's refusals into SCIM's: a taken name is 409 uniqueness (RFC 7644 §3.3). */
async function refusing<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof ConstraintViolation) {
      const what = err.field === 'email' ? 'userName' : err.field === 'name' ? 'displayName' : err.field;
      throw new ScimError(409, 'uniqueness', `${what} is taken by another ${err.field === 'name' ? 'group' : 'person'}`);
    }
    if (err instanceof SearchTooCostly) throw new ScimError(400, 'tooMany', err.message);
    throw err;
  }
}

const UNPROVEN_HOLDER =
  'userName is taken by an account of the box whose address was never proven (someone signed up with it, came ' +
  'from an identity provider not trusted for emails, or typed it where the box mails no link): it is not the ' +
  "directory's to adopt. An administrator of the box may vouch for the address (PUT /users/<id> with " +
  'email_verified: true, which ends the password, factors and sign-ins its maker set) or delete the account; ' +
  'then provision the person again.';

/**
 * refusing, for a write of a person that asks for the userName `asked()` gives: when its holder is
 * a person the directory does not see, the 409 says so, and what the box's administrator can do.
 */
async function refusingUserName<T>(svc: ScimServices, asked: () => string | undefined, work: () => Promise<T>): Promise<T> {
  return refusing(async () => {
    try {
      return await work();
    } catch (err) {
      const userName = asked();
      if (err instanceof ConstraintViolation && err.field === 'email' && userName !== undefined) {
        const holder = await findUserByEmail(svc.pool, userName);
        if (holder && addressNeverProven(holder)) throw new ScimError(409, 'uniqueness', UNPROVEN_HOLDER);
      }
      throw err;
    }
  });
}

/** The row id of the person the directory names `sub` (their SCIM id); 404 when it names nobody. */
async function personNamed(svc: ScimServices, sub: string): Promise<number> {
  const id = await personOfSubject(svc, DIRECTORY, sub);
  if (id === undefined) throw notFound(`User ${sub}`);
  return id;
}

/** The person as the directory sees them: nobody when their address was never proven (addressNeverProven). */
function seenByDirectory(user: UserRow | undefined, sub: string): UserRow {
  if (!user || addressNeverProven(user)) throw notFound(`User ${sub}`);
  return user;
}

/**
 * What the box's fields become from a SCIM write; a password is checked against the box's rule and
 * hashed here, never kept as sent. RFC 7643 §4.1.1 asks a service provider to "validate the value
 * against server password policy"; one it refuses is "not compatible with the operation or
 * attribute type", RFC 7644 §3.12's invalidValue, with the reason as the detail.
 */
async function fieldsOf(svc: ScimServices, check: PasswordCheck, write: UserWrite): Promise<Partial<UserFields>> {
  const problem = write.password !== undefined ? check(write.password, write.userName) : undefined;
  if (problem) throw invalidValue(`password ${problem}`);
  return {
    email: write.userName,
    // The directory's word on an address is an administrator's: the box vouches for it. A name is no address.
    emailVerified: isEmailAddress(write.userName),
    active: write.active,
    externalId: write.externalId,
    scim: Object.keys(write.kept).length ? write.kept : null,
    ...(write.password !== undefined ? { passwordHash: await svc.argon2.hash(write.password) } : {}),
  };
}

export async function createUser(svc: ScimServices, body: unknown, by: Actor, base: string): Promise<Json> {
  const write = readUser(body);
  const fields = await fieldsOf(svc, await passwordCheck(svc.config), write);
  const noPassword = fields.passwordHash ?? (await dummyHash());
  const user = await refusingUserName(
    svc,
    () => write.userName,
    () =>
      createAccount(
        svc,
        {
          ...fields,
          email: write.userName,
          passwordHash: noPassword,
          // Without a password from the directory the person signs in some other way (a provider, a reset link).
          passwordSet: fields.passwordHash !== undefined,
          data: null,
          groupIds: [],
        },
        by,
        'scim',
      ),
  );
  return userResource(user, base, svc.subjects);
}

export async function readUserResource(svc: ScimServices, sub: string, base: string): Promise<Json> {
  return userResource(seenByDirectory(await getUser(svc.pool, await personNamed(svc, sub)), sub), base, svc.subjects);
}

/** PUT (the whole person) or PATCH (operations on them): `make` gives the new representation from the current one. */
async function changeUser(
  svc: ScimServices,
  sub: string,
  make: (current: Json) => unknown,
  pre: Precondition,
  by: Actor,
  base: string,
): Promise<Json> {
  const check = await passwordCheck(svc.config); // loaded before the person's row is locked
  const id = await personNamed(svc, sub);
  let asked: string | undefined;
  const user = await refusingUserName(
    svc,
    () => asked,
    () =>
      changeAccount(
        svc,
        id,
        async (before: UserRow) => {
          const current = userResource(seenByDirectory(before, sub), base, svc.subjects);
          checkVersion(current, pre);
          const write = readUser(make(current));
          asked = write.userName;
          const fields = await fieldsOf(svc, check, write);
          // The address is vouched for when the directory names a new one, not again at every change.
          if (write.userName === before.email) delete fields.emailVerified;
          return fields;
        },
        by,
      ),
  );
  if (!user) throw notFound(`User ${sub}`);
  return userResource(user, base, svc.subjects);
}

export const replaceUser = (svc: ScimServices, sub: string, body: unknown, pre: Precondition, by: Actor, base: string): Promise<Json> =>
  // RFC 7644 §3.5.1: a PUT replaces; the id it carries, if any, must be this one.
  changeUser(svc, sub, (current) => sameId(body, current), pre, by, base);

export const patchUser = (svc: ScimServices, sub: string, body: unknown, pre: Precondition, by: Actor, base: string): Promise<Json> =>
  changeUser(svc, sub, (current) => applyPatch(RESOURCE_TYPES.User, current, body), pre, by, base);

function sameId(body: unknown, current: Json): unknown {
  if (body !== null && typeof body === 'object' && 'id' in body && String((body as Json).id) !== current.id)
    throw new ScimError(400, 'mutability', `id is the box's: this resource's is ${String(current.id)}`);
  return body;
}

export async function deleteUser(svc: ScimServices, sub: string, pre: Precondition, by: Actor, base: string): Promise<void> {
  const id = await personNamed(svc, sub);
  // Seen first: a person the directory does not see is not its to delete either.
  const current = userResource(seenByDirectory(await getUser(svc.pool, id), sub), base, svc.subjects);
  if (pre.ifMatch !== undefined) checkVersion(current, pre);
  if (!(await removeAccount(svc, id, by))) throw notFound(`User ${sub}`);
}

export async function searchUsers(svc: ScimServices, filter: ScimFilter | undefined, page: ScimPage, base: string) {
  const found = await refusing(() => searchScim(svc.pool, 'User', filter, page, svc.subjects.publicSubjects));
  const users = await getUsers(svc.pool, found.ids);
  return { total: found.total, resources: users.map((u) => userResource(u, base, svc.subjects)) };
}

/**
 * The row ids of the members a write names by their SCIM ids, each a person the directory sees (a
 * person of another box, an id of nobody — a row id or a pairwise sub on a box of opaque subs — or
 * a person it does not see is refused alike).
 */
async function membersNamed(svc: ScimServices, tx: Transaction, named: string[]): Promise<number[]> {
  const people = await peopleOfSubjects({ pool: tx, subjects: svc.subjects }, DIRECTORY, named);
  const unseen = new Set(await unknownToDirectory(tx, [...people.values()]));
  const nobody = named.filter((sub) => !people.has(sub) || unseen.has(people.get(sub)!));
  if (nobody.length) throw invalidValue(`members: no person of this box has the id ${nobody.join(', ')}`);
  return [...new Set(people.values())];
}

/** The box's own groups (api/reserved.ts) keep their names: policies link them by name. */
function checkReserved(svc: ScimServices, group: GroupRow, newName: string | undefined): void {
  if (!isReserved(reservedRecords(svc.config.rootClientId), 'Group', group.name) || newName === group.name) return;
  throw new ScimError(400, 'mutability', `group "${group.name}" is one of the box's own: it cannot be ${newName ? 'renamed' : 'deleted'}`);
}

async function groupJson(svc: ScimServices, db: Transaction | ScimServices['pool'], group: GroupRow, base: string): Promise<Json> {
  return groupResource(group, (await membersOf(db, [group.id])).get(group.id) ?? [], base, svc.subjects);
}

export async function createScimGroup(svc: ScimServices, body: unknown, base: string): Promise<Json> {
  const write = readGroup(body);
  const made = await refusing(() =>
    withTransaction(svc.pool, async (tx) => {
      const members = await membersNamed(svc, tx, write.members);
      const group = await createGroup(tx, write.displayName, null, false, write.externalId);
      if (members.length) await changeMembers(tx, group.id, { set: members });
      return groupJson(svc, tx, (await getGroup(tx, group.id))!, base);
    }),
  );
  svc.users.clear(); // cached people carry their groups' names
  return made;
}

export async function readGroupResource(svc: ScimServices, id: number, withMembers: boolean, base: string): Promise<Json> {
  const group = await getGroup(svc.pool, id);
  if (!group) throw notFound(`Group ${id}`);
  return withMembers ? groupJson(svc, svc.pool, group, base) : groupResource(group, undefined, base, svc.subjects);
}

async function changeGroup(
  svc: ScimServices,
  id: number,
  make: (current: Json) => unknown,
  pre: Precondition,
  base: string,
): Promise<Json> {
  const changed = await refusing(() =>
    withTransaction(svc.pool, async (tx) => {
      if (!(await lockGroup(tx, id))) throw notFound(`Group ${id}`);
      const before = (await getGroup(tx, id))!;
      const current = await groupJson(svc, tx, before, base);
      checkVersion(current, pre);
      const write = readGroup(make(current));
      checkReserved(svc, before, write.displayName);
      const members = await membersNamed(svc, tx, write.members);
      await updateGroup(tx, id, { name: write.displayName, externalId: write.externalId });
      await changeMembers(tx, id, { set: members });
      return groupJson(svc, tx, (await getGroup(tx, id))!, base);
    }),
  );
  svc.users.clear();
  return changed;
}

export const replaceGroup = (svc: ScimServices, id: number, body: unknown, pre: Precondition, base: string): Promise<Json> =>
  changeGroup(svc, id, (current) => sameId(body, current), pre, base);

export const patchGroup = (svc: ScimServices, id: number, body: unknown, pre: Precondition, base: string): Promise<Json> =>
  changeGroup(svc, id, (current) => applyPatch(RESOURCE_TYPES.Group, current, body), pre, base);

export async function deleteScimGroup(svc: ScimServices, id: number, pre: Precondition, base: string): Promise<void> {
  const group = await getGroup(svc.pool, id);
  if (!group) throw notFound(`Group ${id}`);
  checkReserved(svc, group, undefined);
  if (pre.ifMatch !== undefined) checkVersion(await groupJson(svc, svc.pool, group, base), pre);
  if (!(await deleteGroup(svc.pool, id))) throw notFound(`Group ${id}`);
  svc.users.clear();
}

export async function searchGroups(svc: ScimServices, filter: ScimFilter | undefined, page: ScimPage, withMembers: boolean, base: string) {
  const found = await refusing(() => searchScim(svc.pool, 'Group', filter, page, svc.subjects.publicSubjects));
  const groups = await getGroups(svc.pool, found.ids);
  const members = withMembers ? await membersOf(svc.pool, found.ids) : undefined;
  const shown = (g: GroupRow): Json => groupResource(g, members ? (members.get(g.id) ?? []) : undefined, base, svc.subjects);
  return { total: found.total, resources: groups.map(shown) };
}
