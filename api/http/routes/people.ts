// The users and groups REST API (spec §4.5): /users and /groups, with the token
// as ?access_token= or a bearer header (authentication and policies run before).
import { type Request, type RequestHandler, type Response, Router } from '../router.js';
import { ApiError, notFound } from '../../errors.js';
import type { Argon2Gate } from '../../credentials/secrets.js';
import { groupInput, rejected, userInput } from '../../schema/people.js';
import { passwordCheck } from '../../schema/password-policy.js';
import { isReserved, reservedRecords } from '../../reserved.js';
import type { Config } from '../../config.js';
import type { Pool } from '../../db/pool.js';
import { ConstraintViolation } from '../../store/constraints.js';
import { createGroup, deleteGroup, getGroup, listGroups, unknownGroupIds, updateGroup, type GroupRow } from '../../store/groups.js';
import { parseSearch } from '../../store/search.js';
import { changeAccount, createAccount, removeAccount, resetFactors, type AccountServices } from '../../people/accounts.js';
import { factorState, listFactors, type FactorSummary } from '../../store/factors.js';
import type { Queryable } from '../../db/pool.js';
import { getUser, listUsers, type UserRow } from '../../store/users.js';
import { actorOf } from '../auth.js';
import { resourceBody } from '../body.js';
import { send } from '../respond.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: Config;
  pool: Pool;
  argon2: Argon2Gate;
}

/**
 * What the person's directory (SCIM) wrote of them that the box has no field for: its id of them
 * (externalId) and the attributes kept as sent (name, displayName, the enterprise extension…;
 * never a password, which is hashed, not kept). Null for a person no directory wrote. Read-only
 * here: a directory's attributes are the directory's, written through SCIM alone.
 */
function scimJson(u: UserRow): Record<string, unknown> | null {
  if (u.externalId === null && u.scim === null) return null;
  return { ...(u.externalId !== null ? { externalId: u.externalId } : {}), ...(u.scim ?? {}) };
}

/**
 * The user as the REST API shows them: one record with its directory's attributes, or list
 * entries without. Never the password hash (docs/concepts/users-and-groups.md): nothing a caller
 * does needs it — a password is checked by signing in and changed by writing a new one — while
 * anyone holding it can guess the password offline at their own pace, the admin's included, and
 * the right to read people (a PEP's Subject Search, a helpdesk) is one that is handed out.
 */
export function userJson(u: UserRow, oneRecord: boolean): Record<string, unknown> {
  return {
    id: u.id,
    email: u.email,
    email_verified: u.emailVerified,
    must_verify_email: u.mustVerifyEmail,
    active: u.active,
    data: u.data,
    status: u.status,
    'group-ids': u.groups.map((g) => g.id),
    groups: u.groups,
    ...(oneRecord ? { scim: scimJson(u) } : {}),
  };
}

export function groupJson(g: GroupRow): Record<string, unknown> {
  return {
    id: g.id,
    name: g.name,
    description: g.description,
    require_second_factor: g.requireSecondFactor,
    created_at: g.createdAt.toISOString(),
  };
}

function factorJson(f: FactorSummary): Record<string, unknown> {
  return {
    id: f.id,
    kind: f.kind,
    name: f.name,
    created_at: f.createdAt.toISOString(),
    last_used_at: f.lastUsedAt?.toISOString() ?? null,
    device_type: f.deviceType,
  };
}

/** A person's factors as an administrator sees them: their summaries and the rules over them, never a key or secret. */
async function factorsJson(db: Queryable, userId: number): Promise<Record<string, unknown>> {
  const [factors, state] = await Promise.all([listFactors(db, userId), factorState(db, userId)]);
  return {
    factors: factors.map(factorJson),
    recovery_codes_left: state.recoveryCodes,
    must_enrol: state.mustEnrol,
    group_requires: state.groupRequires,
  };
}

export function idParam(req: Request, what: string): number {
  const raw = req.params.id as string;
  const id = /^\d{1,15}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(id) || id < 1) throw notFound(`${what} ${JSON.stringify(raw)}`);
  return id;
}

/** Runs a write, turning constraint collisions (taken email, vanished group) into 422s. */
async function writing<T>(body: unknown, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof ConstraintViolation) throw rejected(body, err.field, err.message);
    throw err;
  }
}

async function checkGroups(svc: Pick<Needs, 'pool'>, body: unknown, ids: number[] | undefined): Promise<void> {
  const unknown = await unknownGroupIds(svc.pool, ids ?? []);
  if (unknown.length) throw rejected(body, 'group-ids', `no such group: ${unknown.join(', ')}`);
}

/** The box's own groups (api/reserved.ts) keep their names (policies link them by name) and are not deleted. */
async function checkReservedGroup(svc: Pick<Needs, 'config' | 'pool'>, id: number, newName: string | undefined): Promise<void> {
  const group = await getGroup(svc.pool, id);
  if (!group || !isReserved(reservedRecords(svc.config.rootClientId), 'Group', group.name)) return;
  if (newName === group.name) return;
  throw new ApiError(
    409,
    'conflict',
    `group "${group.name}" is one of the box's own records (its policy links it by name): ` +
      `it cannot be ${newName === undefined ? 'deleted' : 'renamed'}`,
  );
}

function paged(res: Response, total: number): Response {
  return res.set('X-Total-Count', String(total));
}

/** What /users and /groups use (AccountServices: changing and removing accounts closes their grants). */
export type PeopleRouterServices = AccountServices & Pick<Needs, 'config' | 'argon2'>;

export function peopleRouter(svc: PeopleRouterServices, guard: RequestHandler): Router {
  const router = new Router();
  const recorded = (req: Request, kind: 'Group', id: number, action: 'created' | 'changed' | 'deleted'): void =>
    svc.audit.record({ event: 'record_changed', kind, id: String(id), action, by: actorOf(req.principal!) });

  router.get('/users', guard, async (req, res) => {
    const { total, users } = await listUsers(svc.pool, parseSearch(req.query));
    send(
      req,
      paged(res, total),
      200,
      users.map((u) => userJson(u, false)),
    );
  });

  router.get('/users/:id', guard, async (req, res) => {
    const user = await getUser(svc.pool, idParam(req, 'user'));
    if (!user) throw notFound(`user ${req.params.id}`);
    send(req, res, 200, userJson(user, true));
  });

  router.post('/users', ...resourceBody, guard, async (req, res) => {
    const argon2 = svc.argon2.until(res.gone);
    const input = userInput(req.body, true, undefined, { check: await passwordCheck(svc.config) });
    await checkGroups(svc, req.body, input.groupIds);
    const user = await writing(req.body, async () =>
      createAccount(
        svc,
        {
          email: input.email!,
          passwordHash: await argon2.hash(input.password!),
          data: input.data ?? null,
          groupIds: input.groupIds ?? [],
          // An address an administrator enters is one the box vouches for, unless the request says otherwise.
          emailVerified: input.emailVerified ?? true,
        },
        actorOf(req.principal!),
      ),
    );
    const { id, email, email_verified, must_verify_email, data, status } = userJson(user, true);
    res.location(`/users/${user.id}`);
    send(req, res, 201, { id, email, email_verified, must_verify_email, data, status });
  });

  // PUT changes the fields it carries; a new password ends what the old one obtained (api/people/accounts.ts).
  // email_verified is one of them: true is the administrator vouching for the address; a new
  // address without it is unverified (and gets a link, with mail configured).
  router.put('/users/:id', ...resourceBody, guard, async (req, res) => {
    const id = idParam(req, 'user');
    // A new password must not be like the person's address: the one the body gives, else the one they have.
    const carriesPassword = typeof req.body === 'object' && req.body !== null && 'password' in req.body;
    const stored = carriesPassword ? await getUser(svc.pool, id) : undefined;
    const input = userInput(req.body, false, id, { check: await passwordCheck(svc.config), email: stored?.email });
    await checkGroups(svc, req.body, input.groupIds);
    const fields = {
      ...(input.email !== undefined ? { email: input.email } : {}),
      ...(input.emailVerified !== undefined ? { emailVerified: input.emailVerified } : {}),
      ...(input.data !== undefined ? { data: input.data } : {}),
      ...(input.groupIds !== undefined ? { groupIds: input.groupIds } : {}),
      ...(input.active !== undefined ? { active: input.active } : {}),
    };
    const password = input.password;
    const argon2 = svc.argon2.until(res.gone);
    // The password the person has already is kept, not set anew: a manifest applied again (GitOps,
    // `user apply -f`) must not end the person's sessions each time. Checked before the lock (argon2
    // is slow); a hash changed meanwhile by another request means this body's password is set.
    const kept = password !== undefined && stored?.passwordSet === true && (await argon2.verify(stored.passwordHash, password, 'write'));
    const known = password !== undefined && !kept ? await argon2.hash(password) : undefined;
    const user = await writing(req.body, async () =>
      changeAccount(
        svc,
        id,
        password === undefined
          ? fields
          : async (before) => ({
              ...fields,
              ...(kept && before.passwordHash === stored.passwordHash ? {} : { passwordHash: known ?? (await argon2.hash(password)) }),
            }),
        actorOf(req.principal!),
      ),
    );
    if (!user) throw notFound(`user ${id}`);
    send(req, res, 200, userJson(user, true));
  });

  router.delete('/users/:id', guard, async (req, res) => {
    const id = idParam(req, 'user');
    const user = await removeAccount(svc, id, actorOf(req.principal!));
    if (!user) throw notFound(`user ${id}`);
    send(req, res, 200, userJson(user, true));
  });

  router.get('/users/:id/factors', guard, async (req, res) => {
    const id = idParam(req, 'user');
    if (!(await getUser(svc.pool, id))) throw notFound(`user ${id}`);
    send(req, res, 200, await factorsJson(svc.pool, id));
  });

  // A reset, not a DELETE of /factors: besides removing them it makes the person enrol anew and ends their sessions.
  router.post('/users/:id/factors/reset', guard, async (req, res) => {
    const id = idParam(req, 'user');
    if (!(await resetFactors(svc, id, actorOf(req.principal!)))) throw notFound(`user ${id}`);
    send(req, res, 200, await factorsJson(svc.pool, id));
  });

  router.get('/groups', guard, async (req, res) => {
    const { total, groups } = await listGroups(svc.pool, parseSearch(req.query));
    send(req, paged(res, total), 200, groups.map(groupJson));
  });

  router.get('/groups/:id', guard, async (req, res) => {
    const group = await getGroup(svc.pool, idParam(req, 'group'));
    if (!group) throw notFound(`group ${req.params.id}`);
    send(req, res, 200, groupJson(group));
  });

  router.post('/groups', ...resourceBody, guard, async (req, res) => {
    const input = groupInput(req.body, true);
    const group = await writing(req.body, () => createGroup(svc.pool, input.name!, input.description ?? null, input.requireSecondFactor));
    res.location(`/groups/${group.id}`);
    recorded(req, 'Group', group.id, 'created');
    send(req, res, 201, groupJson(group));
  });

  router.put('/groups/:id', ...resourceBody, guard, async (req, res) => {
    const id = idParam(req, 'group');
    const input = groupInput(req.body, false);
    if (input.name !== undefined) await checkReservedGroup(svc, id, input.name);
    const group = await writing(req.body, () => updateGroup(svc.pool, id, input));
    if (!group) throw notFound(`group ${id}`);
    svc.users.clear(); // cached users carry group names
    recorded(req, 'Group', group.id, 'changed');
    send(req, res, 200, groupJson(group));
  });

  router.delete('/groups/:id', guard, async (req, res) => {
    await checkReservedGroup(svc, idParam(req, 'group'), undefined);
    const group = await deleteGroup(svc.pool, idParam(req, 'group'));
    if (!group) throw notFound(`group ${req.params.id}`);
    svc.users.clear(); // memberships are gone
    recorded(req, 'Group', group.id, 'deleted');
    send(req, res, 200, groupJson(group));
  });

  return router;
}
