// Users of a box and their group memberships.
import { withTransaction, type Pool, type Queryable } from '../db/pool.js';
import { deleteBrowserSessionsOfUser } from './browser.js';
import { closeForUser } from './sessions.js';
import { foreignKeyViolation, uniqueViolation } from './constraints.js';

export interface GroupRef {
  id: number;
  name: string;
}

export interface UserRow {
  id: number;
  email: string;
  passwordHash: string;
  data: string | null;
  status: string | null;
  /** An administrator entered the email (or confirmed it); one a person signed up with is not. */
  emailVerified: boolean;
  groups: GroupRef[];
  createdAt: Date;
  updatedAt: Date;
}

interface DbRow {
  id: number;
  email: string;
  password_hash: string;
  data: string | null;
  status: string | null;
  email_verified: boolean;
  groups: GroupRef[];
  created_at: Date;
  updated_at: Date;
}

const fromDb = (r: DbRow): UserRow => ({
  id: r.id,
  email: r.email,
  passwordHash: r.password_hash,
  data: r.data,
  status: r.status,
  emailVerified: r.email_verified,
  groups: r.groups.map((g) => ({ id: Number(g.id), name: g.name })),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const SELECT = `
  SELECT u.*, COALESCE(json_agg(json_build_object('id', g.id, 'name', g.name) ORDER BY g.id)
                       FILTER (WHERE g.id IS NOT NULL), '[]') AS groups
  FROM users u LEFT JOIN user_groups ug ON ug.user_id = u.id LEFT JOIN groups g ON g.id = ug.group_id`;

export interface UserFields {
  email: string;
  passwordHash: string;
  data: string | null;
  groupIds: number[];
  /** Whether the box vouches for the email (the ID token's email_verified): an administrator's entry is, unless told otherwise. */
  emailVerified?: boolean;
}

async function setMemberships(db: Queryable, userId: number, groupIds: number[]): Promise<void> {
  await db.query('DELETE FROM user_groups WHERE user_id = $1 AND NOT (group_id = ANY($2))', [userId, groupIds]);
  await db
    .query('INSERT INTO user_groups (user_id, group_id) SELECT $1, unnest($2::bigint[]) ON CONFLICT DO NOTHING', [userId, groupIds])
    .catch((err: unknown) => foreignKeyViolation(err, 'group-ids', 'names a group that does not exist'));
}

export async function getUser(db: Queryable, id: number): Promise<UserRow | undefined> {
  const { rows } = await db.query<DbRow>(`${SELECT} WHERE u.id = $1 GROUP BY u.id`, [id]);
  return rows[0] && fromDb(rows[0]);
}

export async function findUserByEmail(db: Queryable, email: string): Promise<UserRow | undefined> {
  const { rows } = await db.query<DbRow>(`${SELECT} WHERE lower(u.email) = lower($1) GROUP BY u.id`, [email]);
  return rows[0] && fromDb(rows[0]);
}

export async function createUser(pool: Pool, fields: UserFields): Promise<UserRow> {
  return withTransaction(pool, async (tx) => {
    const { rows } = await tx
      .query<{ id: number }>('INSERT INTO users (email, password_hash, data, email_verified) VALUES ($1, $2, $3, $4) RETURNING id', [
        fields.email,
        fields.passwordHash,
        fields.data,
        fields.emailVerified ?? true,
      ])
      .catch((err: unknown) => uniqueViolation(err, 'users_email', 'email'));
    await setMemberships(tx, rows[0]!.id, fields.groupIds);
    return (await getUser(tx, rows[0]!.id))!;
  });
}

/**
 * Changes the given fields. A new password closes every session of the user:
 * whoever held the old one must sign in again.
 */
export async function updateUser(pool: Pool, id: number, change: Partial<UserFields>): Promise<UserRow | undefined> {
  return withTransaction(pool, async (tx) => {
    const { rowCount } = await tx
      .query(
        // email_verified changes only when asked to: an edit that carries the email along
        // (or changes it) must not turn a self-made account into a verified identity.
        `UPDATE users SET email = COALESCE($2, email), password_hash = COALESCE($3, password_hash),
         email_verified = COALESCE($6, email_verified),
         data = CASE WHEN $4 THEN $5 ELSE data END, updated_at = now() WHERE id = $1`,
        [
          id,
          change.email ?? null,
          change.passwordHash ?? null,
          change.data !== undefined,
          change.data ?? null,
          change.emailVerified ?? null,
        ],
      )
      .catch((err: unknown) => uniqueViolation(err, 'users_email', 'email'));
    if (!rowCount) return undefined;
    if (change.groupIds) await setMemberships(tx, id, change.groupIds);
    if (change.passwordHash) {
      await closeForUser(tx, id);
      await deleteBrowserSessionsOfUser(tx, id);
    }
    return getUser(tx, id);
  });
}

export async function deleteUser(pool: Pool, id: number): Promise<UserRow | undefined> {
  return withTransaction(pool, async (tx) => {
    const user = await getUser(tx, id);
    if (!user) return undefined;
    await closeForUser(tx, id);
    await tx.query('DELETE FROM users WHERE id = $1', [id]);
    return user;
  });
}

export interface UserQuery {
  count: number;
  page: number;
  /** Exact email, case-insensitive. */
  email?: string;
  /** Part of the email, case-insensitive. */
  q?: string;
}

export async function listUsers(db: Queryable, q: UserQuery): Promise<{ total: number; users: UserRow[] }> {
  const params: unknown[] = [];
  const where: string[] = [];
  if (q.email !== undefined) where.push(`lower(u.email) = lower($${params.push(q.email)})`);
  if (q.q !== undefined) where.push(`strpos(lower(u.email), lower($${params.push(q.q)})) > 0`);
  const whereSql = where.length ? `WHERE ${where.join(' AND ')}` : '';
  const total = (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM users u ${whereSql}`, params)).rows[0]!.n;
  params.push(q.count, (q.page - 1) * q.count);
  const { rows } = await db.query<DbRow>(
    `${SELECT} ${whereSql} GROUP BY u.id ORDER BY u.id LIMIT $${params.length - 1} OFFSET $${params.length}`,
    params,
  );
  return { total, users: rows.map(fromDb) };
}
