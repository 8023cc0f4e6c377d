// Groups of a box. Deleting a group removes its memberships (ON DELETE CASCADE).
import type { Queryable } from '../db/pool.js';
import { uniqueViolation } from './constraints.js';
import { bigintId, columnOrderAndPage, columnWhere, type ColumnSearch, type SearchQuery } from './search.js';

export interface GroupRow {
  id: number;
  name: string;
  description: string | null;
  /** Members must have a second factor: they enrol one at their next sign-in (api/people/factors.ts). */
  requireSecondFactor: boolean;
  createdAt: Date;
}

interface DbRow {
  id: number;
  name: string;
  description: string | null;
  require_second_factor: boolean;
  created_at: Date;
}

const fromDb = (r: DbRow): GroupRow => ({
  id: r.id,
  name: r.name,
  description: r.description,
  requireSecondFactor: r.require_second_factor,
  createdAt: r.created_at,
});

export async function getGroup(db: Queryable, id: number): Promise<GroupRow | undefined> {
  const { rows } = await db.query<DbRow>('SELECT * FROM groups WHERE id = $1', [id]);
  return rows[0] && fromDb(rows[0]);
}

export async function findGroupByName(db: Queryable, name: string): Promise<GroupRow | undefined> {
  const { rows } = await db.query<DbRow>('SELECT * FROM groups WHERE lower(name) = lower($1)', [name]);
  return rows[0] && fromDb(rows[0]);
}

export async function createGroup(db: Queryable, name: string, description: string | null, requireSecondFactor = false): Promise<GroupRow> {
  const { rows } = await db
    .query<DbRow>('INSERT INTO groups (name, description, require_second_factor) VALUES ($1, $2, $3) RETURNING *', [
      name,
      description,
      requireSecondFactor,
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
  change: { name?: string; description?: string | null; requireSecondFactor?: boolean },
): Promise<GroupRow | undefined> {
  const { rows } = await db
    .query<DbRow>(
      `UPDATE groups SET name = COALESCE($2, name), description = CASE WHEN $3 THEN $4 ELSE description END,
       require_second_factor = COALESCE($5, require_second_factor)
     WHERE id = $1 RETURNING *`,
      [id, change.name ?? null, change.description !== undefined, change.description ?? null, change.requireSecondFactor ?? null],
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
