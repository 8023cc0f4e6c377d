// Sessions: sign-out with the token itself (DELETE /Session, no policy needed),
// and the resource API (search, read, change, close) behind policies.
import { Router, type Request, type RequestHandler } from '../router.js';
import { ApiError, ValidationError, notFound } from '../../errors.js';
import { checkPresented, type ResourceServices } from '../../credentials/dpop/resource.js';
import { resourceError } from '../../credentials/errors.js';
import { closeGrants, forgetSession } from '../../credentials/closing.js';
import { TOKEN_EXCHANGE } from '../../oauth/grants/token-exchange.js';
import type { Pool } from '../../db/pool.js';
import type { RecordCache } from '../../cache/record-cache.js';
import type { Audit } from '../../audit.js';
import { parseSearch } from '../../store/search.js';
import { findById, searchSessions, setExpirations, toSessionResource, type CloseSelector, type SessionRow } from '../../store/sessions.js';
import { actorOf, presentedCredential, resourceRequest, unauthorized } from '../auth.js';
import { resourceBody } from '../body.js';
import { send } from '../respond.js';
import { bundle } from './resources.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  pool: Pool;
  sessions: RecordCache<SessionRow>;
  audit: Audit;
}

/** Session `id` as it is now: among the rows a close returned, or read (it was closed before). */
async function asClosed(svc: Pick<Needs, 'pool'>, closed: SessionRow[], id: string): Promise<SessionRow> {
  return closed.find((s) => s.id === id) ?? (await findById(svc.pool, id))!;
}

/**
 * What signing out with a token ends: its grant. A grant's sessions share a family,
 * so that the refresh token dies with a token refreshed from it. A token another
 * client exchanged from it (RFC 8693) is in that family only to be closed with it;
 * its own grant is itself and what was exchanged from it in turn: its holder, a
 * service the person never signed in to, does not end the person's sign-in.
 */
function signedOutGrant(session: SessionRow): CloseSelector {
  return session.type === TOKEN_EXCHANGE ? { tree: session.id } : { family: session.family };
}

/** What sign-out with a token uses: the token's session, and closing its grant. */
export type SignOutServices = ResourceServices & Pick<Needs, 'audit' | 'pool'>;

/**
 * DELETE /Session: sign-out. Closes the whole family of the bearer token's session, so the
 * grant's refresh token dies with it even when the token presented came from a refresh
 * (its session is a child; the refresh token stays on the first session without rotation);
 * an exchanged token, only itself and what was exchanged from it (signedOutGrant).
 */
export function signOut(svc: SignOutServices): RequestHandler {
  return async (req, res) => {
    const presented = presentedCredential(req);
    if (!presented) {
      throw resourceError('invalid_token', 'send the token to revoke as Authorization: Bearer <token>', {
        'WWW-Authenticate': 'Bearer realm="boxauth"',
      });
    }
    // A DPoP-bound token signs out with a proof of its key (RFC 9449 §7), as it does anything else.
    const check = await checkPresented(svc, presented, resourceRequest(svc, req));
    if ('problem' in check) throw unauthorized(check.problem, true, check.dpop ? check : undefined);
    const { session } = check;
    const closed = await closeGrants(svc, signedOutGrant(session), {
      how: 'sign-out',
      by: { client: session.clientId, ...(session.userId !== null ? { user: String(session.userId) } : {}), session: session.id },
    });
    send(req, res, 200, toSessionResource(await asClosed(svc, closed, session.id)));
  };
}

function parseTime(body: Record<string, unknown>, field: string): Date | null | undefined {
  const value = body[field];
  if (value === undefined) return undefined;
  if (value === null) return null;
  const date = typeof value === 'string' ? new Date(value) : new Date(NaN);
  if (Number.isNaN(date.getTime())) throw ValidationError.field(body, field, 'must be an ISO 8601 date-time or null');
  return date;
}

const READ_ONLY = ['type', 'client', 'user', 'audience', 'scope', 'start', 'end', 'parent', 'details'];

/** What the Session resource API uses: the rows, and closing grants (which the session cache forgets). */
export type SessionRouterServices = Pick<Needs, 'audit' | 'pool' | 'sessions'>;

export function sessionRouter(svc: SessionRouterServices, guard: RequestHandler): Router {
  const router = new Router();
  const id = (req: Request): string => req.params.id as string;

  router.get('/Session', guard, async (req, res) => {
    const { total, rows } = await searchSessions(svc.pool, parseSearch(req.query));
    const now = Date.now();
    send(
      req,
      res,
      200,
      bundle(
        total,
        rows.map((s) => toSessionResource(s, now)),
      ),
    );
  });

  router.get('/Session/:id', guard, async (req, res) => {
    const session = await findById(svc.pool, id(req));
    if (!session) throw notFound(`Session "${id(req)}"`);
    send(req, res, 200, toSessionResource(session));
  });

  // Sessions are created by token requests only.
  router.post('/Session', guard, () => {
    throw new ApiError(
      405,
      'method_not_allowed',
      'sessions are created by token requests (POST /auth/token), not through the resource API',
    );
  });

  // PUT may shorten or extend `exp` / `refresh_token_exp`, or close the session
  // (`active: false`). Everything else a session records is history and read-only.
  router.put('/Session/:id', ...resourceBody, guard, async (req, res) => {
    const session = await findById(svc.pool, id(req));
    if (!session) throw notFound(`Session "${id(req)}"`);
    const body = req.body as Record<string, unknown>;
    if (!body || typeof body !== 'object' || Array.isArray(body))
      throw new ValidationError(body ?? null, { resource: ['a Session object is required'] });
    const current: Record<string, unknown> = { ...toSessionResource(session) };
    const errors: Record<string, string[]> = {};
    if (body.id !== undefined && body.id !== session.id) errors.id = [`must equal the id in the URL ("${session.id}")`];
    if (body.resourceType !== undefined && body.resourceType !== 'Session') errors.resourceType = ['must be "Session"'];
    for (const field of READ_ONLY) {
      if (body[field] !== undefined && JSON.stringify(body[field]) !== JSON.stringify(current[field])) errors[field] = ['is read-only'];
    }
    if (body.active !== undefined && typeof body.active !== 'boolean') errors.active = ['must be true or false'];
    if (body.active === true && !session.active) errors.active = ['a closed session cannot be reopened'];
    if (Object.keys(errors).length) throw new ValidationError(body, errors);
    const exp = parseTime(body, 'exp');
    const refreshTokenExp = parseTime(body, 'refresh_token_exp');
    if (body.active === false && session.active) await closeGrants(svc, { tree: session.id }, { how: 'api', by: actorOf(req.principal!) });
    const updated = await setExpirations(
      svc.pool,
      session.id,
      exp === undefined ? session.exp : exp,
      refreshTokenExp === undefined ? session.refreshTokenExp : refreshTokenExp,
    );
    if (!updated) throw notFound(`Session "${session.id}"`);
    forgetSession(svc, session);
    send(req, res, 200, toSessionResource(updated));
  });

  // DELETE closes the session (and those refreshed from it); the record stays for audit until purged.
  router.delete('/Session/:id', guard, async (req, res) => {
    const session = await findById(svc.pool, id(req));
    if (!session) throw notFound(`Session "${id(req)}"`);
    const closed = await closeGrants(svc, { tree: session.id }, { how: 'api', by: actorOf(req.principal!) });
    send(req, res, 200, toSessionResource(await asClosed(svc, closed, session.id)));
  });

  return router;
}
