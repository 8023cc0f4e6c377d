// The SCIM 2.0 door (RFC 7644) at <base>/scim/v2: it only translates HTTP to
// api/people/scim/ and back. A client's bearer token and an AccessPolicy let a directory in,
// as for the rest of the box API (the request object's resource/type is "scim"); every
// refusal, from a missing token to a bad filter, is the RFC's error body (§3.12).
import { ErrorRequestHandler, Request, RequestHandler, Response, Router } from '../router.js';
import type { Audit } from '../../audit.js';
import type { Config } from '../../config.js';
import { ApiError } from '../../errors.js';
import { ScimError } from '../../people/scim/errors.js';
import { parseFilter } from '../../people/scim/filter.js';
import { project } from '../../people/scim/attributes.js';
import type { Json } from '../../people/scim/patch.js';
import * as scim from '../../people/scim/provisioning.js';
import {
  ERROR,
  LIST_RESPONSE,
  RESOURCE_TYPES,
  SCHEMAS,
  SEARCH_REQUEST,
  resourceTypeDoc,
  schemaDoc,
  serviceProviderConfig,
  type ResourceKind,
} from '../../people/scim/schemas.js';
import type { ScimPage } from '../../store/scim-search.js';
import { actorOf, authenticate, authorize, type PrincipalServices } from '../auth.js';
import { scimBody } from '../body.js';
import { errorAnswer } from '../errors.js';
import type { Policies } from '../../policy/evaluate.js';
import type { Logger } from '../../log.js';
import type { Metrics } from '../../metrics.js';
import { forThisRequest } from '../request-work.js';
import type { Argon2Gate } from '../../credentials/secrets.js';

/** The door's paths are spelt out in full below: a policy and the OpenAPI document see them as they are. */
export const SCIM_PATH = '/scim/v2';
/** The most resources one page holds (ServiceProviderConfig filter.maxResults). */
export const MAX_RESULTS = 200;
const MEDIA = 'application/scim+json; charset=utf-8';
const ROOT_SEARCH = '/scim/v2/.search';

/** The methods each path of the door takes. */
const METHODS: Record<string, string> = {
  '/scim/v2/ServiceProviderConfig': 'GET',
  '/scim/v2/ResourceTypes': 'GET',
  '/scim/v2/ResourceTypes/:id': 'GET',
  '/scim/v2/Schemas': 'GET',
  '/scim/v2/Schemas/:id': 'GET',
  '/scim/v2/Users': 'GET, POST',
  '/scim/v2/Users/.search': 'POST',
  '/scim/v2/Users/:id': 'GET, PUT, PATCH, DELETE',
  '/scim/v2/Groups': 'GET, POST',
  '/scim/v2/Groups/.search': 'POST',
  '/scim/v2/Groups/:id': 'GET, PUT, PATCH, DELETE',
};

// The box's own argon2 gate: each write runs its hashes as its request's (forThisRequest).
type Needs = scim.ScimServices &
  PrincipalServices & { config: Config; policies: Policies; audit: Audit; log: Logger; metrics: Metrics; argon2: Argon2Gate };

function answer(res: Response, status: number, body: unknown): void {
  const etag = (body as { meta?: { version?: unknown } } | undefined)?.meta?.version;
  if (typeof etag === 'string') res.set('ETag', etag);
  res.status(status).type(MEDIA).send(JSON.stringify(body));
}

/**
 * Whether the client holds the current version already (RFC 7644 §3.14; RFC 9110 §13.1.2,
 * If-None-Match): "*" (the resource exists), or a listed entity tag that matches `version` by
 * weak comparison (§8.8.3.2: W/"x" and "x" are the same version).
 */
function holdsCurrent(ifNoneMatch: string | undefined, version: string): boolean {
  if (ifNoneMatch === undefined) return false;
  if (ifNoneMatch.trim() === '*') return true;
  const opaque = (tag: string): string => tag.replace(/^W\//, '');
  return (ifNoneMatch.match(/(?:W\/)?"[^"]*"/g) ?? []).some((tag) => opaque(tag) === opaque(version));
}

/**
 * A resource read: 304 Not Modified with its ETag and no body when the client holds its current
 * version ("the service provider SHALL return an HTTP 304 (Not Modified) status", RFC 7644 §3.14);
 * else the resource.
 */
function answerRead(req: Request, res: Response, resource: Json): void {
  const version = (resource.meta as { version?: unknown } | undefined)?.version;
  if (typeof version === 'string' && holdsCurrent(req.headers['if-none-match'], version)) {
    res.set('ETag', version).status(304).end();
    return;
  }
  answer(res, 200, resource);
}

/** A Group's id (its row id). A User's is their public sub, read in api/people/scim/provisioning.ts. */
function groupIdOf(req: Request): number {
  const raw = String(req.params.id);
  if (!/^\d{1,15}$/.test(raw)) throw new ScimError(404, undefined, `Group ${raw} not found`);
  return Number(raw);
}

/** A comma-separated attribute list (attributes, excludedAttributes), from the query or a SearchRequest. */
function names(raw: unknown): string[] | undefined {
  if (raw === undefined) return undefined;
  const list = Array.isArray(raw) ? raw : [raw];
  if (!list.every((v) => typeof v === 'string')) throw new ScimError(400, 'invalidValue', 'attribute lists are comma-separated names');
  return list
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter(Boolean);
}

/** RFC 7644 §3.4.2.4: startIndex below 1 is 1; count below 0 is 0; at most MAX_RESULTS. */
function pageOf(startIndex: unknown, count: unknown): ScimPage {
  const int = (raw: unknown, name: string, fallback: number): number => {
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if ((typeof raw !== 'string' && typeof raw !== 'number') || !Number.isInteger(n))
      throw new ScimError(400, 'invalidValue', `${name} must be an integer`);
    return n;
  };
  return {
    startIndex: Math.min(Math.max(int(startIndex, 'startIndex', 1), 1), 1_000_000_000),
    count: Math.min(Math.max(int(count, 'count', 100), 0), MAX_RESULTS),
  };
}

interface Query {
  filter?: unknown;
  startIndex?: unknown;
  count?: unknown;
  attributes?: unknown;
  excludedAttributes?: unknown;
}

/** Whether a group's members are to be read at all (Entra ID asks for groups with excludedAttributes=members). */
function wantsMembers(attributes: string[] | undefined, excluded: string[] | undefined): boolean {
  const named = (list: string[] | undefined): boolean => !!list?.some((a) => /^(urn:.*:)?members(\..*)?$/i.test(a));
  return attributes?.length ? named(attributes) : !named(excluded);
}

export function scimRouter(svc: Needs): { router: Router; errors: ErrorRequestHandler } {
  const router = new Router();
  const base = `${svc.config.baseUrl}${SCIM_PATH}`;
  const guard: RequestHandler[] = [authenticate(svc), authorize(svc)];
  const recorded = (req: Request, kind: 'Group', id: string, action: 'created' | 'changed' | 'deleted'): void =>
    svc.audit.record({ event: 'record_changed', kind, id, action, by: actorOf(req.principal!) });
  const pre = (req: Request): scim.Precondition => ({ ifMatch: req.headers['if-match'] });

  router.get('/scim/v2/ServiceProviderConfig', ...guard, (_req, res) =>
    answer(res, 200, serviceProviderConfig(base, svc.config.baseUrl, MAX_RESULTS)),
  );
  router.get('/scim/v2/ResourceTypes', ...guard, (_req, res) => {
    const types = Object.values(RESOURCE_TYPES).map((t) => resourceTypeDoc(base, t));
    answer(res, 200, { schemas: [LIST_RESPONSE], totalResults: types.length, startIndex: 1, itemsPerPage: types.length, Resources: types });
  });
  router.get('/scim/v2/ResourceTypes/:id', ...guard, (req, res) => {
    const type = Object.values(RESOURCE_TYPES).find((t) => t.kind === req.params.id);
    if (!type) throw new ScimError(404, undefined, `no resource type ${String(req.params.id)}`);
    answer(res, 200, resourceTypeDoc(base, type));
  });
  router.get('/scim/v2/Schemas', ...guard, (_req, res) => {
    const docs = SCHEMAS.map((s) => schemaDoc(base, s));
    answer(res, 200, { schemas: [LIST_RESPONSE], totalResults: docs.length, startIndex: 1, itemsPerPage: docs.length, Resources: docs });
  });
  router.get('/scim/v2/Schemas/:id', ...guard, (req, res) => {
    const schema = SCHEMAS.find((s) => s.id === req.params.id);
    if (!schema) throw new ScimError(404, undefined, `no schema ${String(req.params.id)}`);
    answer(res, 200, schemaDoc(base, schema));
  });

  /** A list or a search (GET with query parameters, or POST /.search with a SearchRequest: RFC 7644 §3.4.3). */
  async function list(kind: ResourceKind, q: Query, res: Response): Promise<void> {
    const type = RESOURCE_TYPES[kind];
    if (q.filter !== undefined && typeof q.filter !== 'string') throw new ScimError(400, 'invalidFilter', 'give one filter');
    const filter = q.filter ? parseFilter(type, q.filter) : undefined;
    const page = pageOf(q.startIndex, q.count);
    const attributes = names(q.attributes);
    const excluded = names(q.excludedAttributes);
    const found =
      kind === 'User'
        ? await scim.searchUsers(svc, filter, page, base)
        : await scim.searchGroups(svc, filter, page, wantsMembers(attributes, excluded), base);
    answer(res, 200, {
      schemas: [LIST_RESPONSE],
      totalResults: found.total,
      startIndex: page.startIndex,
      itemsPerPage: found.resources.length,
      Resources: found.resources.map((r) => project(type, r, attributes, excluded)),
    });
  }

  function shown(kind: ResourceKind, req: Request, resource: Json): Json {
    return project(RESOURCE_TYPES[kind], resource, names(req.query.attributes), names(req.query.excludedAttributes));
  }

  router.get('/scim/v2/Users', ...guard, async (req, res) => list('User', req.query as Query, res));
  router.post('/scim/v2/Users/.search', ...scimBody, ...guard, async (req, res) => list('User', searchRequest(req.body), res));
  router.post('/scim/v2/Users', ...scimBody, ...guard, async (req, res) => {
    const user = await scim.createUser(forThisRequest(svc, res), req.body, actorOf(req.principal!), base);
    res.location(`${base}/Users/${String(user.id)}`);
    answer(res, 201, shown('User', req, user));
  });
  router.get('/scim/v2/Users/:id', ...guard, async (req, res) => {
    answerRead(req, res, shown('User', req, await scim.readUserResource(svc, String(req.params.id), base)));
  });
  router.put('/scim/v2/Users/:id', ...scimBody, ...guard, async (req, res) => {
    const user = await scim.replaceUser(forThisRequest(svc, res), String(req.params.id), req.body, pre(req), actorOf(req.principal!), base);
    answer(res, 200, shown('User', req, user));
  });
  router.patch('/scim/v2/Users/:id', ...scimBody, ...guard, async (req, res) => {
    const user = await scim.patchUser(forThisRequest(svc, res), String(req.params.id), req.body, pre(req), actorOf(req.principal!), base);
    answer(res, 200, shown('User', req, user));
  });
  router.delete('/scim/v2/Users/:id', ...guard, async (req, res) => {
    await scim.deleteUser(svc, String(req.params.id), pre(req), actorOf(req.principal!), base);
    res.status(204).end();
  });

  router.get('/scim/v2/Groups', ...guard, async (req, res) => list('Group', req.query as Query, res));
  router.post('/scim/v2/Groups/.search', ...scimBody, ...guard, async (req, res) => list('Group', searchRequest(req.body), res));
  router.post('/scim/v2/Groups', ...scimBody, ...guard, async (req, res) => {
    const group = await scim.createScimGroup(svc, req.body, base);
    recorded(req, 'Group', String(group.id), 'created');
    res.location(`${base}/Groups/${String(group.id)}`);
    answer(res, 201, shown('Group', req, group));
  });
  router.get('/scim/v2/Groups/:id', ...guard, async (req, res) => {
    const attributes = names(req.query.attributes);
    const excluded = names(req.query.excludedAttributes);
    const group = await scim.readGroupResource(svc, groupIdOf(req), wantsMembers(attributes, excluded), base);
    answerRead(req, res, project(RESOURCE_TYPES.Group, group, attributes, excluded));
  });
  router.put('/scim/v2/Groups/:id', ...scimBody, ...guard, async (req, res) => {
    const group = await scim.replaceGroup(svc, groupIdOf(req), req.body, pre(req), base);
    recorded(req, 'Group', String(group.id), 'changed');
    answer(res, 200, shown('Group', req, group));
  });
  router.patch('/scim/v2/Groups/:id', ...scimBody, ...guard, async (req, res) => {
    const group = await scim.patchGroup(svc, groupIdOf(req), req.body, pre(req), base);
    recorded(req, 'Group', String(group.id), 'changed');
    answer(res, 200, shown('Group', req, group));
  });
  router.delete('/scim/v2/Groups/:id', ...guard, async (req, res) => {
    const id = groupIdOf(req);
    await scim.deleteScimGroup(svc, id, pre(req), base);
    recorded(req, 'Group', String(id), 'deleted');
    res.status(204).end();
  });

  // RFC 9110 §15.5.6: a path the door serves, asked with a method it does not take, is 405 with Allow.
  for (const [path, methods] of Object.entries(METHODS)) {
    router.all(path, (_req, res) => {
      res.set('Allow', methods);
      throw new ScimError(405, undefined, `${path} takes ${methods}`);
    });
  }
  // RFC 7644 §3.4.3: a search of every resource type at the root is optional; §3.12: 501 when not offered.
  router.all(ROOT_SEARCH, () => {
    throw new ScimError(501, undefined, 'searching Users and Groups at once is not offered: POST /Users/.search or /Groups/.search');
  });

  // Anything else under the door is SCIM's 404, not the box API's.
  router.use(SCIM_PATH, () => {
    throw new ScimError(404, undefined, 'no such SCIM endpoint');
  });

  /** Every error under /scim/v2 as RFC 7644 §3.12 words it. */
  const errors: ErrorRequestHandler = (err: unknown, req, res, next) => {
    if (!req.path.startsWith(`${SCIM_PATH}/`) && req.path !== SCIM_PATH) return next(err);
    if (res.headersSent) return;
    if (err instanceof ScimError) return answer(res, err.status, scimError(err.status, err.scimType, err.message));
    const { status, headers, body } = errorAnswer(err, svc, req);
    const detail = (body as { error_description?: string }).error_description ?? 'the request failed';
    const scimType = status === 400 && err instanceof ApiError ? 'invalidSyntax' : undefined;
    res.set(headers);
    answer(res, status, scimError(status, scimType, detail));
  };
  return { router, errors };
}

function scimError(status: number, scimType: string | undefined, detail: string): Json {
  return { schemas: [ERROR], status: String(status), ...(scimType ? { scimType } : {}), detail };
}

/** A SearchRequest (RFC 7644 §3.4.3) as the query a GET would have carried. */
function searchRequest(body: unknown): Query {
  const b = (body ?? {}) as Record<string, unknown>;
  const schemas = b.schemas;
  if (!Array.isArray(schemas) || !schemas.includes(SEARCH_REQUEST))
    throw new ScimError(400, 'invalidSyntax', `a search's body is a SearchRequest: "schemas": ["${SEARCH_REQUEST}"]`);
  const joined = (v: unknown): unknown => (Array.isArray(v) ? v.join(',') : v);
  return {
    filter: b.filter,
    startIndex: b.startIndex,
    count: b.count,
    attributes: joined(b.attributes),
    excludedAttributes: joined(b.excludedAttributes),
  };
}
