// The request bodies of the AuthZEN Authorization API 1.0 (final, January 2026),
// read into evaluations. Two kinds of error, as §7.2.1 has them: "errors that
// pertain to the entire payload" are a 400 (an ApiError thrown here), "errors in
// individual evaluations" of a batch are that evaluation's own answer (a Problem,
// reported by ./authzen.ts as a `false` decision with `context.error`).
import { badRequest } from '../../errors.js';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The Access Evaluation Request (§6.1): subject, action and resource REQUIRED, context OPTIONAL. */
export interface Evaluation {
  subject: { type: SubjectType; id: string; properties?: Json };
  action: { name: string; properties?: Json };
  resource: { type: string; id: string; properties?: Json };
  context?: Json;
}

/** The subjects the box can name (the mapping is in ./authzen.ts); the spec leaves `type` to the PDP. */
export const SUBJECT_TYPES = ['user', 'client', 'token'] as const;
export type SubjectType = (typeof SUBJECT_TYPES)[number];

/** §7.1.2: "exactly one of the following values"; `execute_all` is the default. */
export const SEMANTICS = ['execute_all', 'deny_on_first_deny', 'permit_on_first_permit'] as const;
export type Semantic = (typeof SEMANTICS)[number];

/** Why one evaluation of a batch could not be evaluated (§7.2.1's second kind of error). */
export interface Problem {
  problem: string;
}

/** §11.7: "reasonable protections" against large payloads; one request asks at most this many. */
export const MAX_EVALUATIONS = 100;

const ENTITIES = { subject: ['type', 'id'], action: ['name'], resource: ['type', 'id'] } as const;
type EntityName = keyof typeof ENTITIES;

/**
 * What is wrong with the entity `name` of `raw` (a present one, for defaults), or undefined.
 * `keys` are those it must have (a search asks for the entity it searches by its type alone, §8).
 */
function entityProblem(raw: Json, name: EntityName, at: string, keys: readonly string[] = ENTITIES[name]): string | undefined {
  const value = raw[name];
  if (!isObject(value)) return `${at}${name} is required (an object)`;
  // §5: each of these keys is "REQUIRED. A string value"; an empty one names nothing, so it is refused too.
  for (const key of keys) {
    if (typeof value[key] !== 'string' || value[key] === '') return `${at}${name}.${key} is required (a non-empty string)`;
  }
  if (value.properties !== undefined && !isObject(value.properties)) return `${at}${name}.properties must be an object`;
  if (name === 'subject' && keys.includes('id') && !SUBJECT_TYPES.includes(value.type as SubjectType)) {
    return `${at}subject.type must be one of ${SUBJECT_TYPES.join(', ')} (got "${String(value.type)}")`;
  }
  return undefined;
}

const contextProblem = (raw: Json, at: string): string | undefined =>
  raw.context !== undefined && !isObject(raw.context) ? `${at}context must be an object` : undefined;

/** `raw` as an Evaluation, or what is wrong with it. */
function evaluationOf(raw: Json, at: string): Evaluation | Problem {
  const problem =
    entityProblem(raw, 'subject', at) ?? entityProblem(raw, 'action', at) ?? entityProblem(raw, 'resource', at) ?? contextProblem(raw, at);
  if (problem) return { problem };
  return {
    subject: raw.subject as Evaluation['subject'],
    action: raw.action as Evaluation['action'],
    resource: raw.resource as Evaluation['resource'],
    ...(raw.context ? { context: raw.context as Json } : {}),
  };
}

/**
 * An Access Evaluation Request (§6.1). §10.1.1: "If a required attribute in the
 * information model is omitted, the server MUST return a "Bad Request" error".
 * Keys the spec does not define are ignored ("receivers MUST ignore unknown fields").
 */
export function accessEvaluation(body: unknown): Evaluation {
  if (!isObject(body)) throw badRequest('the body must be an Access Evaluation Request (a JSON object)');
  const read = evaluationOf(body, '');
  if ('problem' in read) throw badRequest(read.problem);
  return read;
}

export type EvaluationsRequest = { single: Evaluation } | { items: (Evaluation | Problem)[]; semantic: Semantic };

/**
 * An Access Evaluations Request (§7.1). Without evaluations, or with an empty
 * array, it "behaves in a backwards-compatible manner with the (single) Access
 * Evaluation API Request". Otherwise each evaluation takes the top-level subject,
 * action, resource and context for the keys it lacks (§7.1.1: a key "specified
 * within an individual evaluation object overrides the corresponding top-level
 * default", whole — entities are not merged key by key), and one that still lacks
 * one ("any of these keys omitted from an evaluation object MUST be provided as a
 * top-level key") is that evaluation's error, not the batch's.
 */
export function accessEvaluations(body: unknown): EvaluationsRequest {
  if (!isObject(body)) throw badRequest('the body must be an Access Evaluations Request (a JSON object)');
  const { evaluations, options, ...rest } = body;
  if (evaluations !== undefined && !Array.isArray(evaluations)) throw badRequest('evaluations must be an array');
  if (evaluations === undefined || evaluations.length === 0) return { single: accessEvaluation(rest) };
  if (evaluations.length > MAX_EVALUATIONS) throw badRequest(`at most ${MAX_EVALUATIONS} evaluations in one request`);
  const at = evaluations.findIndex((e) => !isObject(e));
  if (at !== -1) throw badRequest(`evaluations[${at}] must be an object (an Access Evaluation Request)`);

  // The defaults are part of the payload: one of the wrong type is the whole request's error.
  const defaults: Json = {};
  for (const name of Object.keys(ENTITIES) as EntityName[]) {
    if (rest[name] === undefined) continue;
    const problem = entityProblem(rest, name, '');
    if (problem) throw badRequest(`${problem} (a default of the evaluations)`);
    defaults[name] = rest[name];
  }
  const problem = contextProblem(rest, '');
  if (problem) throw badRequest(`${problem} (a default of the evaluations)`);
  if (rest.context !== undefined) defaults.context = rest.context;

  return {
    items: (evaluations as Json[]).map((e, i) => evaluationOf({ ...defaults, ...e }, `evaluations[${i}].`)),
    semantic: semanticOf(options),
  };
}

/** §7.1.2: `options` is "an object"; its keys other than evaluations_semantic are ignored. */
function semanticOf(options: unknown): Semantic {
  if (options === undefined) return 'execute_all';
  if (!isObject(options)) throw badRequest('options must be an object');
  const semantic = options.evaluations_semantic ?? 'execute_all';
  if (!SEMANTICS.includes(semantic as Semantic)) throw badRequest(`options.evaluations_semantic must be one of ${SEMANTICS.join(', ')}`);
  return semantic as Semantic;
}

/**
 * Whether a batch stops after an evaluation that `permitted` (or not; an error is
 * not). §7.1.2: deny_on_first_deny returns "on the first denial" — "any denial
 * (error, or "decision": false)" —, permit_on_first_permit on the first permit.
 */
export function stopsAfter(semantic: Semantic, permitted: boolean): boolean {
  return semantic === 'deny_on_first_deny' ? !permitted : semantic === 'permit_on_first_permit' && permitted;
}

/** §8.2.2: the page a search asks for; the box's default and its most. */
export const PAGE_LIMIT = { default: 100, max: 1000 } as const;

/** A search's page (§8.2.2): how many results at most, and where the previous page said to go on. */
export interface PageAsked {
  limit: number;
  token?: string;
}

/**
 * A search request (§8.4–§8.6): the entity searched for has its type only (an id sent is
 * ignored, §8: the PDP finds them), the others are whole, as in an evaluation; context and page
 * OPTIONAL. Keys the spec does not define are ignored, in `page` too (§10.1.1).
 */
export interface SearchRequest {
  subject: { type: string; id?: string; properties?: Json };
  action?: Evaluation['action'];
  resource: { type: string; id?: string; properties?: Json };
  context?: Json;
  page: PageAsked;
}

export type SearchKind = 'subject' | 'resource' | 'action';

/** What each search must be sent: the keys of each entity (none: the entity is not asked for and is ignored). */
const SEARCHED: Record<SearchKind, Record<EntityName, readonly string[] | undefined>> = {
  subject: { subject: ['type'], action: ['name'], resource: ['type', 'id'] },
  resource: { subject: ['type', 'id'], action: ['name'], resource: ['type'] },
  action: { subject: ['type', 'id'], action: undefined, resource: ['type', 'id'] },
};

/** The search request of `kind` in `body`; a 400 (the whole payload's error) for a malformed one. */
export function searchRequest(kind: SearchKind, body: unknown): SearchRequest {
  if (!isObject(body)) throw badRequest(`the body must be a ${kind[0]!.toUpperCase()}${kind.slice(1)} Search Request (a JSON object)`);
  for (const name of Object.keys(ENTITIES) as EntityName[]) {
    const keys = SEARCHED[kind][name];
    const problem = keys && entityProblem(body, name, '', keys);
    if (problem) throw badRequest(problem);
  }
  const problem = contextProblem(body, '');
  if (problem) throw badRequest(problem);
  return {
    subject: body.subject as SearchRequest['subject'],
    ...(kind !== 'action' ? { action: body.action as Evaluation['action'] } : {}),
    resource: body.resource as SearchRequest['resource'],
    ...(body.context ? { context: body.context as Json } : {}),
    page: pageOf(body.page),
  };
}

/** §8.2.2: `page` is an object; `limit` a positive number (the box's most at most), `token` a string. */
function pageOf(page: unknown): PageAsked {
  if (page === undefined) return { limit: PAGE_LIMIT.default };
  if (!isObject(page)) throw badRequest('page must be an object');
  const { limit = PAGE_LIMIT.default, token } = page;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > PAGE_LIMIT.max) {
    throw badRequest(`page.limit must be an integer from 1 to ${PAGE_LIMIT.max}`);
  }
  if (token !== undefined && typeof token !== 'string') throw badRequest('page.token must be a string');
  return { limit, ...(token ? { token } : {}) };
}
