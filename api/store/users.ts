// Users of a box and their group memberships.
import { withTransaction, type Pool, type Queryable, type Transaction } from '../db/pool.js';
import { emailKey } from '../input.js';
import { isEmailAddress } from '../schema/people.js';
import { foreignKeyViolation, uniqueViolation } from './constraints.js';
import { bigintId, columnOrderAndPage, columnWhere, type ColumnSearch, type SearchQuery } from './search.js';
import { lockForTransaction } from './box-locks.js';

export interface GroupRef {
  id: number;
  name: string;
}

export interface UserRow {
  id: number;
  /** Their opaque stable id (a UUID made with the row): what their subs are made of (api/credentials/subjects.ts). */
  subject: string;
  email: string;
  passwordHash: string;
  data: string | null;
  status: string | null;
  /** An administrator entered the email (or confirmed it); one a person signed up with is not. */
  emailVerified: boolean;
  /** Signed up where registration asks for a proven address first: no sign-in until its link is followed. */
  mustVerifyEmail: boolean;
  /** Has a password of the box; a person an IdentityProvider made has none (its hash stands for a secret nobody knows). */
  passwordSet: boolean;
  /** False: turned off by their directory (SCIM active=false); no sign-in holds them (api/people/steps.ts mayBeSignedIn). */
  active: boolean;
  /** The directory's own id of the person (SCIM externalId), as it sent it. */
  externalId: string | null;
  /** The SCIM attributes the box has no column for, as the directory sent them (api/people/scim/users.ts). */
  scim: Record<string, unknown> | null;
  groups: GroupRef[];
  createdAt: Date;
  updatedAt: Date;
}

interface DbRow {
  id: number;
  subject: string;
  email: string;
  password_hash: string;
  data: string | null;
  status: string | null;
  email_verified: boolean;
  must_verify_email: boolean;
  password_set: boolean;
  active: boolean;
  external_id: string | null;
  scim: Record<string, unknown> | null;
  groups: GroupRef[];
  created_at: Date;
  updated_at: Date;
}

const fromDb = (r: DbRow): UserRow => ({
  id: r.id,
  subject: r.subject,
  email: r.email,
  passwordHash: r.password_hash,
  data: r.data,
  status: r.status,
  emailVerified: r.email_verified,
  mustVerifyEmail: r.must_verify_email,
  passwordSet: r.password_set,
  active: r.active,
  externalId: r.external_id,
  scim: r.scim,
  groups: r.groups.map((g) => ({ id: Number(g.id), name: g.name })),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** The user's `data` (a string of JSON) as an object, or an empty one. */
export function dataOf(user: Pick<UserRow, 'data'>): Record<string, unknown> {
  try {
    const data: unknown = user.data === null ? null : JSON.parse(user.data);
    return data && typeof data === 'object' && !Array.isArray(data) ? (data as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/**
 * Whether the person's address was never proven: it is an address (a SCIM-made person named by
 * what is none is the directory's own) that no link proved and no administrator vouched for — a
 * sign-up, a person made at a provider not trusted for emails, an address taken on the account
 * page of a box without mail. docs/architecture.md §12: nobody adopts such an account (a directory does
 * not see it: neverProvenSql) unless what its maker set ends first (api/people/accounts.ts).
 */
export const addressNeverProven = (user: Pick<UserRow, 'email' | 'emailVerified' | 'mustVerifyEmail'>): boolean =>
  isEmailAddress(user.email) && (!user.emailVerified || user.mustVerifyEmail);

// isEmailAddress's pattern for PostgreSQL: JavaScript's \s (ECMAScript's WhiteSpace and
// LineTerminator) spelled out, which PostgreSQL's \s is not, so that both read one class.
const SPACES = '\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff';
export const EMAIL_ADDRESS_PATTERN = `^[^${SPACES}@]+@[^${SPACES}@]+$`;

/** addressNeverProven of the users row `alias`, in SQL. */
export const neverProvenSql = (alias: string): string =>
  `(${alias}.email ~ '${EMAIL_ADDRESS_PATTERN}' AND (NOT ${alias}.email_verified OR ${alias}.must_verify_email))`;

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
  /** No sign-in until the address is proven (a sign-up where registration asks for it first); cleared with verification. */
  mustVerifyEmail?: boolean;
  /** False: `passwordHash` stands for no password (a person an IdentityProvider made, an account adopted); a new password sets it. */
  passwordSet?: boolean;
  /** False turns the person off; only api/people/accounts.ts setActive changes it (its close goes with it). */
  active?: boolean;
  externalId?: string | null;
  scim?: Record<string, unknown> | null;
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

/** The row ids of the people whose opaque ids (users.subject) these are, by opaque id; a string that is no UUID is nobody. */
export async function idsOfSubjects(db: Queryable, subjects: string[]): Promise<Map<string, number>> {
  const uuids = subjects.filter((s) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(s));
  if (!uuids.length) return new Map();
  const { rows } = await db.query<{ id: string; subject: string }>('SELECT id, subject FROM users WHERE subject = ANY($1::uuid[])', [
    uuids,
  ]);
  return new Map(rows.map((r) => [r.subject, Number(r.id)]));
}

/** Both indexes that make an email taken: users_email_key (017), and lower(email) from before it. */
const EMAIL_INDEXES = ['users_email_key', 'users_email'];

/**
 * The user whose email is `email` as emailKey compares emails. A row without a key (written by
 * the release before 017 while both served, or left without one by backfillEmailKeys because an
 * older account holds it) is found by its email in any ASCII case, and only when no row holds the key.
 */
export async function findUserByEmail(db: Queryable, email: string): Promise<UserRow | undefined> {
  const { rows } = await db.query<DbRow>(
    `${SELECT} WHERE u.email_key = $1 OR (u.email_key IS NULL AND lower(u.email) = lower($2))
     GROUP BY u.id ORDER BY u.email_key IS NULL, u.id LIMIT 1`,
    [emailKey(email), email],
  );
  return rows[0] && fromDb(rows[0]);
}

/**
 * The people a name other than a box id names, at most 100 (the decision point keeps those its
 * PEP may read: one is the answer, two make it ambiguous; one person per sign-in name and per
 * provider, so only a directory that gave a hundred people one externalId reaches the limit):
 * their sign-in name (SCIM's userName, compared as findUserByEmail compares it), their
 * directory's id (SCIM externalId, exactly) or the subject of one of their upstream identities, at
 * any provider (exactly). One query, every key read through an index: users_email_key (and
 * users_email for a row without a key), users_external_id, and the key (provider, subject) of
 * upstream_identities, probed once per provider.
 */
export async function peopleNamed(db: Queryable, name: string): Promise<number[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM users WHERE email_key = $1 OR (email_key IS NULL AND lower(email) = lower($2))
     UNION SELECT id FROM users WHERE external_id = $2
     UNION SELECT user_id FROM upstream_identities WHERE (provider, subject) IN (SELECT id, $2 FROM identity_providers)
     LIMIT 100`,
    [emailKey(name), name],
  );
  return rows.map((r) => Number(r.id));
}

/** A person as a search of people names them: the box id, the sign-in name and the directory's id. */
export interface NamedPerson {
  id: number;
  email: string;
  externalId: string | null;
}

/** Up to `n` people after the id `after` (0: from the first), in id order: a page of a search that reads them all (its key). */
export async function peopleAfter(db: Queryable, after: number, n: number): Promise<NamedPerson[]> {
  const { rows } = await db.query<{ id: string; email: string; external_id: string | null }>(
    'SELECT id, email, external_id FROM users WHERE id > $1 ORDER BY id LIMIT $2',
    [after, n],
  );
  return rows.map((r) => ({ id: Number(r.id), email: r.email, externalId: r.external_id }));
}

export async function createUser(pool: Pool, fields: UserFields): Promise<UserRow> {
  return withTransaction(pool, (tx) => createUserIn(tx, fields));
}

/** createUser in `tx`, with what else the sign-up writes (its mail). */
export async function createUserIn(tx: Transaction, fields: UserFields): Promise<UserRow> {
  const { rows } = await tx
    .query<{ id: number }>(
      `INSERT INTO users (email, email_key, password_hash, data, email_verified, must_verify_email, password_set, active, external_id, scim)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id`,
      [
        fields.email.normalize('NFC'),
        emailKey(fields.email),
        fields.passwordHash,
        fields.data,
        fields.emailVerified ?? true,
        fields.mustVerifyEmail ?? false,
        fields.passwordSet ?? true,
        fields.active ?? true,
        fields.externalId ?? null,
        fields.scim ?? null,
      ],
    )
    .catch((err: unknown) => uniqueViolation(err, EMAIL_INDEXES, 'email'));
  await setMemberships(tx, rows[0]!.id, fields.groupIds);
  return (await getUser(tx, rows[0]!.id))!;
}

/**
 * Changes the given fields, in `tx` (memberships are a second statement); what a
 * new password ends besides is api/people/accounts.ts's business.
 */
export async function updateUser(tx: Transaction, id: number, change: Partial<UserFields>): Promise<UserRow | undefined> {
  const { rowCount } = await tx
    .query(
      // email_verified changes only when asked to: an edit that carries the email along
      // (or changes it) must not turn a self-made account into a verified identity.
      `UPDATE users SET email = COALESCE($2, email), email_key = COALESCE($7, email_key), password_hash = COALESCE($3, password_hash),
       password_set = COALESCE($14, password_set OR $3 IS NOT NULL),
       email_verified = COALESCE($6, email_verified),
       -- vouched for or verified: nothing is left to prove before a sign-in
       must_verify_email = CASE WHEN $6 THEN false ELSE COALESCE($8, must_verify_email) END,
       data = CASE WHEN $4 THEN $5 ELSE data END, active = COALESCE($9, active),
       external_id = CASE WHEN $10 THEN $11 ELSE external_id END, scim = CASE WHEN $12 THEN $13::jsonb ELSE scim END,
       updated_at = now() WHERE id = $1`,
      [
        id,
        change.email?.normalize('NFC') ?? null,
        change.passwordHash ?? null,
        change.data !== undefined,
        change.data ?? null,
        change.emailVerified ?? null,
        change.email === undefined ? null : emailKey(change.email),
        change.mustVerifyEmail ?? null,
        change.active ?? null,
        change.externalId !== undefined,
        change.externalId ?? null,
        change.scim !== undefined,
        change.scim === undefined || change.scim === null ? null : JSON.stringify(change.scim),
        change.passwordSet ?? null,
      ],
    )
    .catch((err: unknown) => uniqueViolation(err, EMAIL_INDEXES, 'email'));
  if (!rowCount) return undefined;
  if (change.groupIds) await setMemberships(tx, id, change.groupIds);
  return getUser(tx, id);
}

/**
 * Holds the person's row (FOR UPDATE) until `tx` ends, for a change of their credentials; false
 * when there is no such person. A sign-in recording its session under holdPerson, and a write
 * that refers to the person and is not committed yet (a browser session, a code: their foreign
 * keys take the row FOR KEY SHARE), are waited for, so that what `tx` does next sees them.
 */
export async function lockUser(tx: Transaction, id: number): Promise<boolean> {
  const { rowCount } = await tx.query('SELECT 1 FROM users WHERE id = $1 FOR UPDATE', [id]);
  return rowCount === 1;
}

/**
 * Holds the person as they are until `tx` ends (FOR SHARE; `change`: FOR NO KEY UPDATE, for a
 * transaction that writes the row later): a sign-in records its browser
 * session or step under it, so that a change of their credentials (lockUser, or its UPDATE)
 * either comes after and ends what the sign-in made, or came before and is seen here. Their
 * password hash, to compare with the one the sign-in checked, and whether they are on (who may
 * be signed in is api/people/steps.ts mayBeSignedIn's to say); undefined when they are gone.
 */
export async function holdPerson(
  tx: Transaction,
  id: number,
  lock: 'share' | 'change' = 'share',
): Promise<{ passwordHash: string; active: boolean } | undefined> {
  // Two holding the row shared, each then writing it, would deadlock: a writer takes it as a write does, from the start.
  const { rows } = await tx.query<{ password_hash: string; active: boolean }>(
    `SELECT password_hash, active FROM users WHERE id = $1 ${lock === 'change' ? 'FOR NO KEY UPDATE' : 'FOR SHARE'}`,
    [id],
  );
  return rows[0] && { passwordHash: rows[0].password_hash, active: rows[0].active };
}

/** Deletes the user (memberships, consents, codes and browser sessions go with the row); false when there was none. */
export async function deleteUser(db: Queryable, id: number): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM users WHERE id = $1', [id]);
  return rowCount === 1;
}

/** A part of an email as emailKey folds it; one of invisible characters only is part of no email, not of every one. */
function emailPart(raw: string): string | undefined {
  const key = emailKey(raw);
  return key === '' && raw !== '' ? undefined : key;
}

/** What /users can be searched and sorted by. */
const USER_SEARCH: ColumnSearch = {
  kind: 'user',
  filters: {
    id: { sql: (p) => `u.id = ${p}`, value: bigintId },
    /** The whole email, as emailKey compares them (a row without a key: in any ASCII case). */
    email: { sql: (p) => `(u.email_key = ${p} OR (u.email_key IS NULL AND lower(u.email) = ${p}))`, value: emailKey },
    /** Part of the email, compared likewise; % and _ are themselves, not patterns. */
    q: { sql: (p) => `strpos(COALESCE(u.email_key, lower(u.email)), ${p}) > 0`, value: emailPart },
  },
  sorts: { id: 'u.id', email: 'lower(u.email)' },
  id: 'u.id',
};

export async function listUsers(db: Queryable, q: SearchQuery): Promise<{ total: number; users: UserRow[] }> {
  const params: unknown[] = [];
  const where = columnWhere(USER_SEARCH, q, params);
  const total = (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM users u ${where}`, params)).rows[0]!.n;
  const page = columnOrderAndPage(USER_SEARCH, q, params);
  const { rows } = await db.query<DbRow>(`${SELECT} ${where} GROUP BY u.id ${page}`, params);
  return { total, users: rows.map(fromDb) };
}

/**
 * Gives every user without one the key of its email (rows from before migration 017, and rows
 * the release before it wrote while both served), at start. Of users whose emails now make one
 * account, the oldest keeps the key and the others stay without: an upgrade must not fail on
 * the people already there. Returns the ids of those left without, for an administrator.
 */
export async function backfillEmailKeys(pool: Pool): Promise<number[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await withTransaction(pool, async (tx) => {
        // Processes starting at once take turns; a user written meanwhile may still take a key first (retried below).
        await lockForTransaction(tx, 'email_key');
        const { rows } = await tx.query<{ id: number; email: string }>('SELECT id, email FROM users WHERE email_key IS NULL ORDER BY id');
        if (!rows.length) return [];
        const { rows: keyed } = await tx.query<{ id: number }>(
          `UPDATE users u SET email_key = k.key
           FROM (SELECT DISTINCT ON (key) id, key FROM unnest($1::bigint[], $2::text[]) AS t(id, key) ORDER BY key, id) k
           WHERE u.id = k.id AND u.email_key IS NULL AND NOT EXISTS (SELECT 1 FROM users o WHERE o.email_key = k.key)
           RETURNING u.id`,
          [rows.map((r) => r.id), rows.map((r) => emailKey(r.email))],
        );
        const done = new Set(keyed.map((r) => r.id));
        return rows.filter((r) => !done.has(r.id)).map((r) => r.id);
      });
    } catch (err) {
      const e = err as { code?: string; constraint?: string };
      if (attempt < 5 && e.code === '23505' && e.constraint === 'users_email_key') continue;
      throw err;
    }
  }
}

/** The people `ids` names, in id order (ids that name nobody are left out). */
export async function getUsers(db: Queryable, ids: number[]): Promise<UserRow[]> {
  if (!ids.length) return [];
  const { rows } = await db.query<DbRow>(`${SELECT} WHERE u.id = ANY($1) GROUP BY u.id ORDER BY u.id`, [ids]);
  return rows.map(fromDb);
}

/**
 * The ids among `ids` that name nobody a directory sees: no person of this box, or one whose
 * address was never proven (addressNeverProven: not the directory's to put in its groups).
 */
export async function unknownToDirectory(db: Queryable, ids: number[]): Promise<number[]> {
  if (!ids.length) return [];
  const { rows } = await db.query<{ id: string }>(`SELECT u.id FROM users u WHERE u.id = ANY($1) AND NOT ${neverProvenSql('u')}`, [ids]);
  const known = new Set(rows.map((r) => Number(r.id)));
  return ids.filter((id) => !known.has(id));
}
