// The kinds of record the box knows by name, each said once: every list of them is derived from
// RECORD_KINDS below — the kinds with a CRD (the generated types and reference page, api/schema/),
// the resource API's (its routers, api/http/app.ts; its OpenAPI paths; the CLI's nouns and their
// help), the audit trail's (what `record_changed` reports, what an event names as its record and
// who may read it, the filters of `boxauth events` and of the console's Events tab), the kinds of
// a refused request (api/http/auth.ts) and of a Webhook's `io.boxauth.resource.*` events. The
// tables of docs/ that list them are checked against it (test/unit/record-kinds.test.ts).
//
// What a kind does differently (its validation, its table, its writer) stays with the code that
// does it, in maps keyed by ResourceKind: a new kind is a type error there until it has its part.
// It is a base module so that every floor may read it (the base imports no floor).

/** What is said once of one kind of record. */
export interface RecordKindSpec {
  /** Declared by a CustomResourceDefinition (crds/<its name in lower case>.yaml). */
  crd?: true;
  /** Served by the box's REST API, by routes of its own (a kind with a CRD: the resource API's). */
  rest?: true;
  /**
   * The first segment of those routes' paths (`/<segment>`, `/<segment>/<id>`) when it is not the
   * kind's name (the resource API serves a kind at its name).
   */
  segment?: string;
  /**
   * What the audit trail says of it: `changes`, each change is a `record_changed` event that names
   * it; `named`, other events name a record of it (an event's `resource.type`).
   */
  trail?: 'changes' | 'named';
  /** The CLI's noun for a kind of the resource API (`boxauth <cli> list`); its plurals and its name are aliases. */
  cli?: string;
}

/** Every kind of record, in the order lists show them. */
export const RECORD_KINDS = {
  Box: { crd: true },
  Client: { crd: true, rest: true, trail: 'changes', cli: 'client' },
  AccessPolicy: { crd: true, rest: true, trail: 'changes', cli: 'policy' },
  App: { crd: true, rest: true, trail: 'changes', cli: 'app' },
  IdentityProvider: { crd: true, rest: true, trail: 'changes', cli: 'idp' },
  Webhook: { crd: true, rest: true, trail: 'changes', cli: 'webhook' },
  Hook: { crd: true, rest: true, trail: 'changes', cli: 'hook' },
  User: { rest: true, segment: 'users', trail: 'changes' },
  Group: { rest: true, segment: 'groups', trail: 'changes' },
  Session: { rest: true, trail: 'named' },
  // A refused decision, by its id for `boxauth explain`.
  Decision: { trail: 'named' },
  // A signing key rotated, by its `kid`.
  SigningKey: { trail: 'named' },
} as const satisfies Record<string, RecordKindSpec>;

type Specs = typeof RECORD_KINDS;

/** A kind of record. */
export type RecordKind = keyof Specs;

/** The kinds whose declaration has `shape`. */
type KindsWith<Shape> = { [K in RecordKind]: Specs[K] extends Shape ? K : never }[RecordKind];

/** A kind with a CRD. */
export type CrdKind = KindsWith<{ crd: true }>;
/** A kind of the resource API (api/http/routes/resources.ts): a CRD's records over REST. */
export type ResourceKind = KindsWith<{ crd: true; rest: true }>;
/** A kind with routes of its own in the REST API. */
export type ServedKind = KindsWith<{ rest: true }>;
/** A kind whose changes the audit trail reports (`record_changed`). */
export type ChangedKind = KindsWith<{ trail: 'changes' }>;
/** A kind the audit trail names a record of (an event's `resource.type`). */
export type TrailKind = KindsWith<{ trail: string }>;

const spec = (kind: RecordKind): RecordKindSpec => RECORD_KINDS[kind];
const kindsWhere = <K extends RecordKind>(test: (kind: RecordKindSpec) => boolean): readonly K[] =>
  (Object.keys(RECORD_KINDS) as RecordKind[]).filter((kind) => test(spec(kind))) as K[];

/** The kinds with a CRD, in the order the generated types and the reference page list them. */
export const CRD_KINDS = kindsWhere<CrdKind>((s) => s.crd === true);
/** The kinds of the resource API. */
export const RESOURCE_KINDS = kindsWhere<ResourceKind>((s) => s.crd === true && s.rest === true);
/** The kinds the REST API serves by routes of their own. */
export const SERVED_KINDS = kindsWhere<ServedKind>((s) => s.rest === true);

/** The kinds whose changes the audit trail reports. */
export const CHANGED_KINDS = kindsWhere<ChangedKind>((s) => s.trail === 'changes');
/** The kinds the audit trail names records of: what its events are searched by (`resource_type`). */
export const TRAIL_KINDS = kindsWhere<TrailKind>((s) => s.trail !== undefined);

/** Where the REST API serves the records of `kind`: the first segment of its paths. */
export const segmentOf = (kind: ServedKind): string => spec(kind).segment ?? kind;

/** The kind of record a REST path's first segment reads and writes (`users` → `User`), or undefined. */
export const kindAtSegment = (segment: string): ServedKind | undefined => SERVED_KINDS.find((kind) => segmentOf(kind) === segment);

/** A name in the plural, as English makes it (AccessPolicy → AccessPolicies, Box → Boxes). */
export function pluralOf(name: string): string {
  if (/[^aeiou]y$/i.test(name)) return `${name.slice(0, -1)}ies`;
  if (/(s|x|ch|sh)$/i.test(name)) return `${name}es`;
  return `${name}s`;
}

/** The CLI's noun for a kind of the resource API, and its aliases: the noun's plural, the kind's name and plural, in lower case. */
export function cliNamesOf(kind: ResourceKind): { name: string; aliases: string[] } {
  const name = RECORD_KINDS[kind].cli;
  const aliases = [pluralOf(name), kind.toLowerCase(), pluralOf(kind).toLowerCase()];
  return { name, aliases: aliases.filter((alias, i) => alias !== name && aliases.indexOf(alias) === i) };
}
