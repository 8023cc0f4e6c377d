// Groups of a box. Deleting a group removes its memberships (ON DELETE CASCADE).
import type { Queryable } from '../db/pool.js';
import { uniqueViolation } from './constraints.js';
import { neverProvenSql } from './users.js';
import { bigintId, columnOrderAndPage, columnWhere, type ColumnSearch, type SearchQuery } from './search.js';

export interface GroupRow {
  id: number;
  name: string;
  description: string | null;
  /** Members must have a second factor: they enrol one at their next sign-in (api/people/factors.ts). */
  requireSecondFactor: boolean;
  /** The directory's own id of the group (SCIM externalId). */
  externalId: string | null;
  createdAt: Date;
  /** Its name, description or members last changed. */
  updatedAt: Date;
}

interface DbRow {
  id: number;
  name: string;
  description: string | null;
  require_second_factor: boolean;
  external_id: string | null;
  created_at: Date;
  updated_at: Date;
}

const fromDb = (r: DbRow): GroupRow => ({
  id: r.id,
  name: r.name,
  description: r.description,
  requireSecondFactor: r.require_second_factor,
  externalId: r.external_id,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export async function getGroup(db: Queryable, id: number): Promise<GroupRow | undefined> {
  const { rows } = await db.query<DbRow>('SELECT * FROM groups WHERE id = $1', [id]);
  return rows[0] && fromDb(rows[0]);
}

/** The groups `ids` names, in id order. */
export async function getGroups(db: Queryable, ids: number[]): Promise<GroupRow[]> {
  if (!ids.length) return [];
  const { rows } = await db.query<DbRow>('SELECT * FROM groups WHERE id = ANY($1) ORDER BY id', [ids]);
  return rows.map(fromDb);
}

export async function findGroupByName(db: Queryable, name: string): Promise<GroupRow | undefined> {
  const { rows } = await db.query<DbRow>('SELECT * FROM groups WHERE lower(name) = lower($1)', [name]);
  return rows[0] && fromDb(rows[0]);
}

export async function createGroup(
  db: Queryable,
  name: string,
  description: string | null,
  requireSecondFactor = false,
  externalId: string | null = null,
): Promise<GroupRow> {
  const { rows } = await db
    .query<DbRow>('INSERT INTO groups (name, description, require_second_factor, external_id) VALUES ($1, $2, $3, $4) RETURNING *', [
      name,
      description,
      requireSecondFactor,
      externalId,
    ])
    .catch((err: unknown) => uniqueViolation(err, 'groups_name', 'name'));
  return fromDb(rows[0]!);
}

/** The group named `name` (any case), created with `description` when missing: two callers at once get the same one. */
export async function ensureGroup(db: Queryable, name: string, description: string): Promise<GroupRow> {
  await db.query('INSERT INTO groups (name, description) VALUES ($1, $2) ON CONFLICT DO NOTHING', [name, description]);
  const group = await findGroupByName(db, name);
  if (!group) throw new Error(`group ${name} was deleted while it was being ensured`);
  return group;
}

export async function updateGroup(
  db: Queryable,
  id: number,
  change: { name?: string; description?: string | null; requireSecondFactor?: boolean; externalId?: string | null },
): Promise<GroupRow | undefined> {
  const { rows } = await db
    .query<DbRow>(
      `UPDATE groups SET name = COALESCE($2, name), description = CASE WHEN $3 THEN $4 ELSE description END,
       require_second_factor = COALESCE($5, require_second_factor),
       external_id = CASE WHEN $6 THEN $7 ELSE external_id END, updated_at = now()
     WHERE id = $1 RETURNING *`,
      [
        id,
        change.name ?? null,
        change.description !== undefined,
        change.description ?? null,
        change.requireSecondFactor ?? null,
        change.externalId !== undefined,
        change.externalId ?? null,
      ],
    )
    .catch((err: unknown) => uniqueViolation(err, 'groups_name', 'name'));
  return rows[0] && fromDb(rows[0]);
}

export async function deleteGroup(db: Queryable, id: number): Promise<GroupRow | undefined> {
  const { rows } = await db.query<DbRow>('DELETE FROM groups WHERE id = $1 RETURNING *', [id]);
  return rows[0] && fromDb(rows[0]);
}

/** What /groups can be searched and sorted by. */
const GROUP_SEARCH: ColumnSearch = {
  kind: 'group',
  filters: {
    id: { sql: (p) => `id = ${p}`, value: bigintId },
    /** The name, in any case (names are unique regardless of case). */
    name: { sql: (p) => `lower(name) = lower(${p})` },
  },
  sorts: { id: 'id', name: 'lower(name)' },
  id: 'id',
};

export async function listGroups(db: Queryable, q: SearchQuery): Promise<{ total: number; groups: GroupRow[] }> {
  const params: unknown[] = [];
  const where = columnWhere(GROUP_SEARCH, q, params);
  const total = (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM groups ${where}`, params)).rows[0]!.n;
  const page = columnOrderAndPage(GROUP_SEARCH, q, params);
  const { rows } = await db.query<DbRow>(`SELECT * FROM groups ${where} ${page}`, params);
  return { total, groups: rows.map(fromDb) };
}

/** The ids among `ids` that name no group. */
export async function unknownGroupIds(db: Queryable, ids: number[]): Promise<number[]> {
  if (!ids.length) return [];
  const { rows } = await db.query<{ id: number }>('SELECT id FROM groups WHERE id = ANY($1)', [ids]);
  const known = new Set(rows.map((r) => r.id));
  return ids.filter((id) => !known.has(id));
}

/**
 * Puts the person in the groups named `member` (made, with `description`, where missing) and takes
 * them out of those named `notMember` (names in any case): the groups an IdentityProvider's rules
 * keep following the provider (api/people/upstream/groups.ts).
 */
export async function followGroups(
  db: Queryable,
  userId: number,
  member: string[],
  notMember: string[],
  description: string,
): Promise<void> {
  if (member.length) {
    await db.query('INSERT INTO groups (name, description) SELECT unnest($1::text[]), $2 ON CONFLICT DO NOTHING', [member, description]);
    await db.query(
      `INSERT INTO user_groups (user_id, group_id) SELECT $1, id FROM groups WHERE lower(name) = ANY(SELECT lower(unnest($2::text[])))
       ON CONFLICT DO NOTHING`,
      [userId, member],
    );
  }
  if (notMember.length)
    await db.query(
      'DELETE FROM user_groups WHERE user_id = $1 AND group_id IN (SELECT id FROM groups WHERE lower(name) = ANY(SELECT lower(unnest($2::text[]))))',
      [userId, notMember],
    );
}

/** A group's member as SCIM shows it: the person's row id, opaque id (users.subject) and sign-in name. */
export interface MemberRef {
  id: number;
  subject: string;
  email: string;
}

/**
 * The members of each of `groupIds` a directory sees, in id order (groups without such members are
 * absent): a person whose address was never proven is nobody to it (users.ts addressNeverProven).
 */
export async function membersOf(db: Queryable, groupIds: number[]): Promise<Map<number, MemberRef[]>> {
  const { rows } = await db.query<{ group_id: number; id: number; subject: string; email: string }>(
    `SELECT ug.group_id, u.id, u.subject, u.email FROM user_groups ug JOIN users u ON u.id = ug.user_id
     WHERE ug.group_id = ANY($1) AND NOT ${neverProvenSql('u')} ORDER BY ug.group_id, u.id`,
    [groupIds],
  );
  const members = new Map<number, MemberRef[]>();
  for (const r of rows) {
    const list = members.get(Number(r.group_id)) ?? [];
    list.push({ id: Number(r.id), subject: r.subject, email: r.email });
    members.set(Number(r.group_id), list);
  }
  return members;
}

/**
 * Changes a group's members as a directory does: `set` makes those it sees exactly those people (a
 * member it does not see, membersOf, is not its to take out), `add` and `remove` add and take out.
 * Every id must name a person it sees (users.ts unknownToDirectory first); the group's updated_at
 * moves. The membership trigger (migration 002) tells every process the people changed.
 */
export async function changeMembers(
  db: Queryable,
  groupId: number,
  change: { set?: number[]; add?: number[]; remove?: number[] },
): Promise<void> {
  if (change.set)
    await db.query(
      `DELETE FROM user_groups ug USING users u
       WHERE ug.group_id = $1 AND NOT (ug.user_id = ANY($2)) AND u.id = ug.user_id AND NOT ${neverProvenSql('u')}`,
      [groupId, change.set],
    );
  const add = change.set ?? change.add ?? [];
  if (add.length)
    await db.query('INSERT INTO user_groups (user_id, group_id) SELECT unnest($2::bigint[]), $1 ON CONFLICT DO NOTHING', [groupId, add]);
  if (change.remove?.length) await db.query('DELETE FROM user_groups WHERE group_id = $1 AND user_id = ANY($2)', [groupId, change.remove]);
  await db.query('UPDATE groups SET updated_at = now() WHERE id = $1', [groupId]);
}

/** Holds the group's row until `tx` ends, so that two changes of its members are made one after the other; false when it is gone. */
export async function lockGroup(db: Queryable, id: number): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM groups WHERE id = $1 FOR UPDATE', [id]);
  return rowCount === 1;
}
