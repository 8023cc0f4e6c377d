// The fields a body may carry and no answer shows: a Client's, an IdentityProvider's (client secret,
// LDAP bind password) or a Webhook's secret, a person's password. Each is declared `writeOnly` in
// the schema of its body — the REST form of a CRD's secretRef (./resources.ts restSchema), the user
// body of the OpenAPI document (./openapi.ts) — and read from there, so a new one is hidden as soon
// as it is declared.
import { peopleSchemas } from './openapi.js';
import { RESOURCE_KINDS } from '../record-kinds.js';
import { restSchema } from './resources.js';

type Properties = Record<string, { writeOnly?: boolean }>;

const writeOnlyOf = (properties: Properties): string[] =>
  Object.entries(properties)
    .filter(([, node]) => node.writeOnly === true)
    .map(([name]) => name);

let fields: ReadonlySet<string> | undefined;

/** The names of the write-only fields of every body the API takes. */
export function writeOnlyFields(): ReadonlySet<string> {
  if (fields) return fields;
  const resources = RESOURCE_KINDS.flatMap((kind) => writeOnlyOf(restSchema(kind).schema.properties as Properties));
  const people = writeOnlyOf((peopleSchemas().UserBody as { properties: Properties }).properties);
  return (fields = new Set([...resources, ...people]));
}

/**
 * The entity of a 422 as it may be shown: the body that was sent, without its write-only fields
 * (a refused write of a Webhook echoed its signing secret). Only the top level is a body's own
 * field: a `password` nested in a policy's pattern is the policy's text.
 */
export function shownEntity(entity: unknown): unknown {
  if (Array.isArray(entity)) return entity.map(shownEntity);
  if (entity === null || typeof entity !== 'object') return entity;
  const hidden = writeOnlyFields();
  return Object.fromEntries(Object.entries(entity).filter(([name]) => !hidden.has(name)));
}
