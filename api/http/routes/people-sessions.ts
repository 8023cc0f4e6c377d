// People's sessions as an administrator sees and ends them: one person's signed-in browsers
// and grants to apps (/users/:id/sessions, /users/:id/grants/:family), and the box's
// (/grants, /sign-ins). Guarded like /users: a policy must allow each request.
import { type Request, type Response, Router } from '../router.js';
import type { RequestHandler } from '../router.js';
import { badRequest, notFound } from '../../errors.js';
import { emailKey, invisibleProblem } from '../../input.js';
import { endGrant, endPersonsSessions, endSignIn, type AccountServices } from '../../people/accounts.js';
import { EMAIL_MAX } from '../../schema/people.js';
import { listBrowserSignIns, type BrowserSignIn } from '../../store/browser-sessions.js';
import { MAX_COUNT } from '../../store/search.js';
import { listPersonGrants, type PersonGrant } from '../../store/sessions.js';
import { getUser } from '../../store/users.js';
import { identitiesOf } from '../../store/identity-providers.js';
import { unlink } from '../../people/upstream/admit.js';
import { actorOf } from '../auth.js';
import { send } from '../respond.js';
import { idParam } from './people.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A session id or grant family from the path: a UUID, or nothing of anyone's (404) before it reaches SQL. */
function uuidParam(req: Request, name: 'sid' | 'family'): string {
  const raw = req.params[name] as string;
  if (!UUID.test(raw)) throw notFound(`${name === 'sid' ? 'signed-in browser' : 'grant'} ${JSON.stringify(raw)}`);
  return raw.toLowerCase();
}

export function signInJson(b: BrowserSignIn, withPerson: boolean): Record<string, unknown> {
  return {
    sid: b.sid,
    ...(withPerson ? { user: b.userId, email: b.email } : {}),
    since: b.since.toISOString(),
    expires_at: b.expiresAt.toISOString(),
    amr: b.amr,
    address: b.address,
    user_agent: b.userAgent,
  };
}

export function grantJson(g: PersonGrant, withPerson: boolean): Record<string, unknown> {
  return {
    id: g.family,
    ...(withPerson ? { user: g.userId, email: g.email } : {}),
    client: g.clientId,
    since: g.since.toISOString(),
    last_used: g.lastUsed.toISOString(),
    scope: g.scope,
    amr: g.amr,
    sid: g.sid,
    address: g.address,
    // An agent's client (api/oauth/agents.ts): the console marks its grants as an agent's.
    agent: g.agent && { kind: g.agent.kind, client_name: g.agent.clientName },
  };
}

/** What the box-wide lists take: part of an email, a client, and the box's paging (`_count`, `_page`). */
interface ListQuery {
  q?: string;
  client?: string;
  limit: number;
  offset: number;
}

function oneValue(query: Record<string, unknown>, name: string): string | undefined {
  const raw = query[name];
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string') throw badRequest(`${name} must be given once, as a plain value`);
  return raw;
}

function pageNumber(query: Record<string, unknown>, name: string, fallback: number, max: number): number {
  const raw = oneValue(query, name);
  if (raw === undefined) return fallback;
  const n = /^\d{1,7}$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= 1 && n <= max)) throw badRequest(`${name} must be an integer from 1 to ${max}`);
  return n;
}

function listQuery(req: Request, allowed: string[]): ListQuery {
  const query = req.query as Record<string, unknown>;
  for (const name of Object.keys(query))
    if (![...allowed, '_count', '_page', 'access_token'].includes(name))
      throw badRequest(`unknown parameter "${name}" (this list takes ${allowed.join(', ')}, _count and _page)`);
  const limit = pageNumber(query, '_count', 100, MAX_COUNT);
  const offset = (pageNumber(query, '_page', 1, 1_000_000) - 1) * limit;
  const rawQ = oneValue(query, 'q');
  if (rawQ !== undefined && rawQ.length > EMAIL_MAX) throw badRequest(`q must be at most ${EMAIL_MAX} characters`);
  if (rawQ !== undefined && invisibleProblem(rawQ)) throw badRequest(`q ${invisibleProblem(rawQ)!}`);
  const client = oneValue(query, 'client');
  if (client !== undefined && !/^[\x21\x23-\x5B\x5D-\x7E]{1,256}$/.test(client)) throw badRequest('client must be a client id');
  const q = rawQ === undefined || rawQ === '' ? undefined : emailKey(rawQ);
  // Every email holds the empty string: a q that folds to nothing is a mistake, not "everyone".
  if (q === '') throw badRequest('q holds nothing of an email');
  return { ...(q !== undefined ? { q } : {}), ...(client !== undefined ? { client } : {}), limit, offset };
}

function paged(res: Response, total: number): Response {
  return res.set('X-Total-Count', String(total));
}

export function peopleSessionsRouter(svc: AccountServices, guard: RequestHandler): Router {
  const router = new Router();
  const existing = async (req: Request): Promise<number> => {
    const id = idParam(req, 'user');
    if (!(await getUser(svc.pool, id))) throw notFound(`user ${id}`);
    return id;
  };
  const everything = { limit: MAX_COUNT, offset: 0 };

  router.get('/users/:id/sessions', guard, async (req, res) => {
    const user = await existing(req);
    const [browsers, grants] = await Promise.all([
      listBrowserSignIns(svc.pool, { user, ...everything }),
      listPersonGrants(svc.pool, { user, ...everything }),
    ]);
    send(req, res, 200, { browsers: browsers.rows.map((b) => signInJson(b, false)), grants: grants.rows.map((g) => grantJson(g, false)) });
  });

  // Everything the person obtained: signed-in browsers, sign-ins half made, codes and grants.
  router.delete('/users/:id/sessions', guard, async (req, res) => {
    const id = idParam(req, 'user');
    if (!(await endPersonsSessions(svc, id, actorOf(req.principal!)))) throw notFound(`user ${id}`);
    res.status(204).end();
  });

  router.delete('/users/:id/sessions/:sid', guard, async (req, res) => {
    const id = idParam(req, 'user');
    const sid = uuidParam(req, 'sid');
    if (!(await endSignIn(svc, id, sid, { how: 'api', by: actorOf(req.principal!) })))
      throw notFound(`signed-in browser ${sid} of user ${id}`);
    res.status(204).end();
  });

  router.get('/users/:id/identities', guard, async (req, res) => {
    const identities = await identitiesOf(svc.pool, await existing(req));
    send(
      req,
      res,
      200,
      identities.map((i) => ({
        provider: i.provider,
        subject: i.subject,
        email: i.email,
        linked_at: i.linkedAt.toISOString(),
        last_used_at: i.lastUsedAt.toISOString(),
      })),
    );
  });

  // An administrator may cut even the only way in (an account taken over at its provider); the person may not.
  router.delete('/users/:id/identities/:provider', guard, async (req, res) => {
    const id = idParam(req, 'user');
    const provider = req.params.provider;
    if ((await unlink(svc, id, provider, actorOf(req.principal!), { evenTheOnlyWayIn: true })) !== undefined)
      throw notFound(`identity of user ${id} at ${JSON.stringify(provider.slice(0, 64))}`);
    res.status(204).end();
  });

  // A grant as a whole (DELETE /Session/<id> ends one session and those refreshed from it, by whatever person).
  router.delete('/users/:id/grants/:family', guard, async (req, res) => {
    const id = idParam(req, 'user');
    const family = uuidParam(req, 'family');
    if (!(await endGrant(svc, id, family, { how: 'api', by: actorOf(req.principal!) }))) throw notFound(`grant ${family} of user ${id}`);
    res.status(204).end();
  });

  router.get('/grants', guard, async (req, res) => {
    const { total, rows } = await listPersonGrants(svc.pool, listQuery(req, ['q', 'client']));
    send(
      req,
      paged(res, total),
      200,
      rows.map((g) => grantJson(g, true)),
    );
  });

  router.get('/sign-ins', guard, async (req, res) => {
    const { total, rows } = await listBrowserSignIns(svc.pool, listQuery(req, ['q']));
    send(
      req,
      paged(res, total),
      200,
      rows.map((b) => signInJson(b, true)),
    );
  });

  return router;
}
