// The audit trail on the box's API (docs/operations/audit.md): GET /AuditEvent searches it,
// newest first, a page at a time by cursor, behind the policies like every resource; an event is
// shown only to whom may read every record it names (api/audit.ts recordsNamedBy), so that an
// administrator of one App sees what happened there and nothing of the rest of the box.
// `boxauth events` and the admin console's Events tab read it.
import { Request, RequestHandler, Router } from '../router.js';
import { recordsNamedBy, type AuditEventResource } from '../../audit.js';
import { badRequest } from '../../errors.js';
import type { Pool } from '../../db/pool.js';
import type { Policies } from '../../policy/evaluate.js';
import { searchAuditEvents, type AuditSearch, type StoredAuditEvent } from '../../store/audit-events.js';
import { readableBy, type Principal } from '../auth.js';
import { send } from '../respond.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  pool: Pool;
  policies: Policies;
}

/** The query parameters GET /AuditEvent takes, and the search field each sets. */
const FILTERS = {
  actor: 'actor',
  user: 'user',
  client: 'client',
  resource_type: 'resourceType',
  resource_id: 'resourceId',
  event: 'event',
} as const;
const PARAMETERS = [...Object.keys(FILTERS), 'outcome', 'since', 'until', '_count', '_cursor', '_after'];
const MAX_COUNT = 1000;
/** The largest id an event may have (PostgreSQL's bigint). */
const MAX_ID = 2n ** 63n - 1n;

function one(query: Request['query'], name: string): string | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '') throw badRequest(`${name} must be given once, with a value`);
  return value;
}

function time(query: Request['query'], name: string): Date | undefined {
  const value = one(query, name);
  if (value === undefined) return undefined;
  const at = new Date(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(at.getTime()))
    throw badRequest(`${name} must be a time in ISO 8601 (2026-11-26 or 2026-11-26T10:02:00Z), not "${value}"`);
  return at;
}

function cursor(query: Request['query'], name: string): string | undefined {
  const value = one(query, name);
  // An id of the trail is a bigint; 0 is where an empty trail is followed from (boxauth events --follow).
  if (value !== undefined && (!/^(0|[1-9]\d{0,18})$/.test(value) || BigInt(value) > MAX_ID))
    throw badRequest(`${name} must be an event's id (an integer from 0 to ${MAX_ID})`);
  return value;
}

/** The search a query asks for; 400 for a parameter it does not know or a value it cannot read. */
export function auditSearchOf(query: Request['query']): AuditSearch {
  const unknown = Object.keys(query).filter((name) => !PARAMETERS.includes(name));
  if (unknown.length) throw badRequest(`unknown parameter ${unknown.join(', ')}: GET /AuditEvent takes ${PARAMETERS.join(', ')}`);
  const search: AuditSearch = { count: 100 };
  for (const [param, field] of Object.entries(FILTERS)) {
    const value = one(query, param);
    if (value !== undefined) search[field] = value;
  }
  const outcome = one(query, 'outcome');
  if (outcome !== undefined && outcome !== 'success' && outcome !== 'failure') throw badRequest('outcome must be success or failure');
  if (outcome) search.outcome = outcome;
  const since = time(query, 'since');
  const until = time(query, 'until');
  if (since) search.since = since;
  if (until) search.until = until;
  const count = one(query, '_count');
  if (count !== undefined) {
    if (!/^\d+$/.test(count) || Number(count) < 1 || Number(count) > MAX_COUNT) throw badRequest(`_count must be 1 to ${MAX_COUNT}`);
    search.count = Number(count);
  }
  const before = cursor(query, '_cursor');
  const after = cursor(query, '_after');
  if (before && after) throw badRequest('_cursor (older events) and _after (newer events) go one at a time');
  if (before) search.before = before;
  if (after) search.after = after;
  return search;
}

/** Whom a refused decision was about (the caller at a gate, the subject an AuthZEN PEP named), as its event says. */
function subjectOf(detail: StoredAuditEvent['detail']): AuditEventResource['subject'] {
  if (detail.event !== 'decision') return null;
  return { client: detail.client ?? null, user: detail.user ?? null };
}

/** An event as the API shows it. */
function eventResource(e: StoredAuditEvent): AuditEventResource {
  return {
    resourceType: 'AuditEvent',
    id: e.id,
    at: e.at.toISOString(),
    event: e.event,
    action: e.action,
    outcome: e.outcome,
    actor: { client: e.actorClient, user: e.actorUser, session: e.actorSession },
    user: e.subjectUser,
    client: e.client,
    subject: subjectOf(e.detail),
    resource: e.resourceType && e.resourceId ? { type: e.resourceType, id: e.resourceId } : null,
    detail: e.detail,
  };
}

/** Events read at most to fill one page for a reader who may not see every event (see readablePage). */
const MOST_READ = 10_000;
/** Events read at a time to fill a page. */
const BATCH = 200;

/**
 * A page of the events `principal` may see, and the id the next page goes on from (undefined: the
 * trail ends within this page). The page is filled with events the reader may see, read on past
 * those it may not, so that where it ends and whether a next page follows tell nothing of the
 * events hidden from it: else a filter naming another App's record, with `_count=1` and a time
 * range, told by its cursor alone whether and when that record changed. Past MOST_READ events
 * read, the page ends where reading stopped (which says only that that many events matched).
 */
async function readablePage(
  svc: Needs,
  principal: Principal,
  search: AuditSearch,
): Promise<{ shown: StoredAuditEvent[]; cursor?: string }> {
  const shown: StoredAuditEvent[] = [];
  const batch = Math.max(search.count, BATCH);
  let from = search;
  for (let read = 0; ;) {
    const found = await searchAuditEvents(svc.pool, { ...from, count: batch });
    read += found.length;
    shown.push(...(await readableBy(svc, principal, found, recordsNamedBy)).slice(0, search.count - shown.length));
    if (shown.length === search.count) return { shown, cursor: shown.at(-1)!.id };
    if (found.length < batch) return { shown };
    const last = found.at(-1)!.id;
    if (read >= MOST_READ) return { shown, cursor: last };
    from = search.after !== undefined ? { ...search, after: last } : { ...search, before: last };
  }
}

export function auditEventRouter(svc: Needs, guard: RequestHandler): Router {
  const router = new Router();

  router.get('/AuditEvent', guard, async (req, res) => {
    const search = auditSearchOf(req.query);
    const { shown, cursor } = await readablePage(svc, req.principal!, search);
    const more = search.after === undefined && cursor !== undefined;
    const next = new URLSearchParams(Object.entries(req.query).filter(([name]) => name !== '_cursor') as [string, string][]);
    if (more) next.set('_cursor', cursor);
    send(req, res, 200, {
      resourceType: 'Bundle',
      type: 'searchset',
      entry: shown.map((e) => ({ resource: eventResource(e) })),
      link: more ? [{ relation: 'next', url: `/AuditEvent?${next}` }] : [],
      // With _after (following the trail): where the next call goes on.
      ...(search.after !== undefined ? { last: cursor ?? shown.at(-1)?.id ?? search.after } : {}),
    });
  });

  return router;
}
