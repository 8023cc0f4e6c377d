// The box's people and groups as SCIM resources (RFC 7643 §4), and what a directory writes read
// back into the box's fields. A person: userName is their sign-in name — their email address, or a
// name that is not one (then they have no address: no mail, no email claim); externalId, active
// and the attributes without a column are kept as sent; password is write-only; groups are
// read-only (a Group's members change them). A group: displayName is its name; members are
// people of this box, by id (the box has no nested groups).
//
// A person's id is their public sub (api/credentials/subjects.ts), as any public client of the box
// sees it: RFC 7643 §3.1's id is "a unique identifier ... stable, non-reassignable", and an opaque
// one says nothing of how many people the box has. On a box whose public subs are still its row
// ids (migration 036), the row id, as before. A group's id is its row id: how many groups the box
// has says nothing of its people.
import { subjectFor, type SubjectClient, type SubjectSettings } from '../../credentials/subjects.js';
import type { GroupRow, MemberRef } from '../../store/groups.js';
import type { UserRow } from '../../store/users.js';
import { EMAIL_MAX, NAME_MAX, isEmailAddress } from '../../schema/people.js';
import { invisibleProblem } from '../../input.js';
import { mixedScriptProblem } from '../../schema/scripts.js';
import { invalidValue } from './errors.js';
import { readResource, versionOf } from './attributes.js';
import { keyOf, type Json } from './patch.js';
import { CORE_GROUP, CORE_USER, ENTERPRISE_USER, RESOURCE_TYPES } from './schemas.js';

const EXTERNAL_ID_MAX = 256;
/** The longest id of a person a write may name: a public sub is a UUID or a row id. */
const SCIM_ID_MAX = 64;

/** Whom the door names people for: a public client (its id is no part of a public sub). */
export const DIRECTORY: SubjectClient = { id: 'scim', subject_type: 'public' };

/** A person's SCIM id: their public sub. */
export const scimId = (subjects: SubjectSettings, person: { id: number; subject: string }): string =>
  subjectFor(subjects, DIRECTORY, person);

/**
 * The most the attributes kept of one person (users.scim) may hold, as JSON. Bounds per string
 * and per list alone let PATCHes pile some 3 MB onto each person, and a page of 200 of them onto
 * one answer; a directory's person is a few kilobytes.
 */
const KEPT_MAX_BYTES = 64 * 1024;

/** What a write of a person sets. */
export interface UserWrite {
  userName: string;
  externalId: string | null;
  active: boolean;
  /** A new password, when the write carries one (to be hashed). */
  password?: string;
  /** The attributes kept as sent (users.scim). */
  kept: Json;
}

export interface GroupWrite {
  displayName: string;
  externalId: string | null;
  /** The members' ids (public subs) as written, when the write names them (a PUT without `members` leaves none, RFC 7644 §3.5.1). */
  members: string[];
}

const field = (body: Json, name: string): unknown => body[keyOf(body, name) ?? name];

function text(body: Json, name: string, max: number, required: boolean): string | undefined {
  const value = field(body, name);
  if (value === undefined || value === null) {
    if (required) throw invalidValue(`${name} is required`);
    return undefined;
  }
  if (typeof value !== 'string' || !value.trim()) throw invalidValue(`${name} must be a non-empty string`);
  if (value.length > max) throw invalidValue(`${name} must be at most ${max} characters`);
  const invisible = invisibleProblem(value);
  if (invisible) throw invalidValue(`${name} ${invisible}`);
  return value.trim();
}

function bodyObject(body: unknown, what: string): Json {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw invalidValue(`the body must be a ${what} object`);
  return body as Json;
}

/** A person as a directory writes them (POST, PUT, or the result of a PATCH). */
export function readUser(raw: unknown): UserWrite {
  const body = bodyObject(raw, 'User');
  const userName = text(body, 'userName', EMAIL_MAX, true)!;
  // One "@" makes it meant as an address: it must be one (a name is anything without an "@").
  if (userName.includes('@') && !isEmailAddress(userName)) throw invalidValue(`userName "${userName}" is not a valid email address`);
  if (/\s/.test(userName)) throw invalidValue('userName must not hold spaces');
  // A look-alike of another person's name or address (api/schema/scripts.ts), with an "@" or without.
  const mixed = mixedScriptProblem(userName);
  if (mixed) throw invalidValue(`userName ${mixed}`);
  const password = field(body, 'password');
  if (password !== undefined && password !== null) {
    // Its length and the rest of the box's rule are checked where the box's settings are (provisioning.ts).
    if (typeof password !== 'string') throw invalidValue('password must be a string');
  }
  const activeRaw = field(body, 'active');
  const read = readResource(RESOURCE_TYPES.User, body);
  const { userName: _u, active, password: _p, ...kept } = read;
  if (Buffer.byteLength(JSON.stringify(kept)) > KEPT_MAX_BYTES)
    throw invalidValue(`the person's attributes would be larger than ${KEPT_MAX_BYTES / 1024} KiB`);
  if (activeRaw !== undefined && activeRaw !== null && typeof active !== 'boolean') throw invalidValue('active must be true or false');
  return {
    userName,
    externalId: text(body, 'externalId', EXTERNAL_ID_MAX, false) ?? null,
    active: active === undefined ? true : (active as boolean),
    ...(typeof password === 'string' ? { password } : {}),
    kept,
  };
}

/** A group as a directory writes it. */
export function readGroup(raw: unknown): GroupWrite {
  const body = bodyObject(raw, 'Group');
  const displayName = text(body, 'displayName', NAME_MAX, true)!;
  const members = field(body, 'members');
  const ids: string[] = [];
  if (members !== undefined && members !== null) {
    if (!Array.isArray(members)) throw invalidValue('members must be a list of {"value": "<person id>"}');
    for (const [i, m] of members.entries()) {
      const member = m !== null && typeof m === 'object' && !Array.isArray(m) ? (m as Json) : undefined;
      const value = member && field(member, 'value');
      const type = member && field(member, 'type');
      if (typeof type === 'string' && type.toLowerCase() !== 'user')
        throw invalidValue(`members[${i}] is a ${type}: a group's members are people (the box has no nested groups)`);
      if (typeof value !== 'string' || !value || value.length > SCIM_ID_MAX)
        throw invalidValue(`members[${i}].value must be the id of a person of this box`);
      ids.push(value);
    }
  }
  return { displayName, externalId: text(body, 'externalId', EXTERNAL_ID_MAX, false) ?? null, members: [...new Set(ids)] };
}

/** A resource's meta (RFC 7643 §3.1), its version made from everything else it shows. */
function withMeta(resource: Json, kind: 'User' | 'Group', location: string, created: Date, modified: Date): Json {
  const meta = { resourceType: kind, created: created.toISOString(), lastModified: modified.toISOString(), location };
  return { ...resource, meta: { ...meta, version: versionOf({ ...resource, meta }) } };
}

/** The attributes of the person a directory wrote or reads (externalId, userName, those kept, active), as SCIM shows them. */
const attributesOf = (user: UserRow): Json => ({
  ...(user.externalId !== null ? { externalId: user.externalId } : {}),
  userName: user.email,
  ...(user.scim ?? {}),
  active: user.active,
});

/**
 * What policies see of the person through SCIM (request.user.scim): their attributes as the SCIM
 * door shows them, without what it shows of the box's own (id, groups, meta); {} for a person no
 * directory wrote (nothing kept, no externalId), whose attributes would only repeat the box's.
 */
export const scimAttributes = (user: UserRow): Json => (user.scim === null && user.externalId === null ? {} : attributesOf(user));

/** The person as SCIM shows them. `base` is the SCIM door's URL (<box>/scim/v2). */
export function userResource(user: UserRow, base: string, subjects: SubjectSettings): Json {
  const kept = user.scim ?? {};
  const id = scimId(subjects, user);
  const resource: Json = {
    schemas: kept[ENTERPRISE_USER] ? [CORE_USER, ENTERPRISE_USER] : [CORE_USER],
    id,
    ...attributesOf(user),
    ...(user.groups.length
      ? { groups: user.groups.map((g) => ({ value: String(g.id), $ref: `${base}/Groups/${g.id}`, display: g.name, type: 'direct' })) }
      : {}),
  };
  return withMeta(resource, 'User', `${base}/Users/${id}`, user.createdAt, user.updatedAt);
}

/**
 * The group as SCIM shows it; `members` undefined leaves them out (excludedAttributes=members: not
 * even read). Its version does not hang on them being shown: a change of members moves the
 * group's updated_at (store/groups.ts changeMembers), which the version is made from.
 */
export function groupResource(group: GroupRow, members: MemberRef[] | undefined, base: string, subjects: SubjectSettings): Json {
  const resource: Json = {
    schemas: [CORE_GROUP],
    id: String(group.id),
    ...(group.externalId !== null ? { externalId: group.externalId } : {}),
    displayName: group.name,
  };
  const { meta, ...shown } = withMeta(resource, 'Group', `${base}/Groups/${group.id}`, group.createdAt, group.updatedAt);
  return {
    ...shown,
    ...(members?.length ? { members: members.map((m) => memberOf(m, base, subjects)) } : {}),
    meta,
  };
}

function memberOf(member: MemberRef, base: string, subjects: SubjectSettings): Json {
  const id = scimId(subjects, member);
  return { value: id, $ref: `${base}/Users/${id}`, type: 'User' };
}
