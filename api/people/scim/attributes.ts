// What a directory writes, read against the schemas (./schemas.ts): names in the schema's
// spelling, values of the attribute's type (Entra ID's "True"/"False" strings read as booleans),
// read-only attributes and ones no schema defines left out (RFC 7644 §3.3: the server ignores
// what it does not keep), and sizes bounded. And what is read back: the `attributes` and
// `excludedAttributes` projection (RFC 7644 §3.4.2.5) and the ETag of a representation.
import { createHash } from 'node:crypto';
import { invisibleProblem } from '../../input.js';
import { invalidValue } from './errors.js';
import { resolvePath } from './filter.js';
import { keyOf, type Json } from './patch.js';
import type { Attribute, ResourceType } from './schemas.js';

/** Bounds on what is kept of one resource. */
const LIMITS = { string: 2048, elements: 100 };

const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

function single(attribute: Attribute, value: unknown, where: string): unknown {
  if (value === null || value === undefined) return undefined;
  if (attribute.type === 'complex') {
    // Entra ID sends `manager` as the manager's id alone: the `value` of the complex attribute.
    if (typeof value === 'string' && attribute.subAttributes?.some((s) => s.name === 'value')) value = { value };
    if (!isObject(value)) throw invalidValue(`${where} is an object of ${attribute.subAttributes!.map((s) => s.name).join(', ')}`);
    const out = normalize(attribute.subAttributes!, value, where);
    return Object.keys(out).length ? out : undefined;
  }
  if (attribute.type === 'boolean') {
    if (typeof value === 'boolean') return value;
    // Entra ID sends booleans as "True" and "False".
    if (typeof value === 'string' && /^(true|false)$/i.test(value)) return value.toLowerCase() === 'true';
    throw invalidValue(`${where} is true or false, not ${JSON.stringify(value).slice(0, 40)}`);
  }
  if (typeof value !== 'string') throw invalidValue(`${where} is a string, not ${JSON.stringify(value).slice(0, 40)}`);
  if (value.length > LIMITS.string) throw invalidValue(`${where} is longer than ${LIMITS.string} characters`);
  const invisible = invisibleProblem(value);
  if (invisible) throw invalidValue(`${where} ${invisible}`);
  return value;
}

function valueOf(attribute: Attribute, value: unknown, where: string): unknown {
  if (!attribute.multiValued) return single(attribute, value, where);
  if (value === null || value === undefined) return undefined;
  const list = Array.isArray(value) ? value : [value];
  if (list.length > LIMITS.elements) throw invalidValue(`${where} holds more than ${LIMITS.elements} values`);
  const out = list.map((e, i) => single(attribute, e, `${where}[${i}]`)).filter((e) => e !== undefined);
  return out.length ? out : undefined;
}

/** `obj` as the attributes `attributes` define it: their spelling, their types; others and read-only ones left out. */
export function normalize(attributes: readonly Attribute[], obj: Json, where = ''): Json {
  const out: Json = {};
  for (const [key, value] of Object.entries(obj)) {
    const attribute = attributes.find((a) => a.name.toLowerCase() === key.toLowerCase());
    if (!attribute || attribute.mutability === 'readOnly') continue;
    const read = valueOf(attribute, value, where ? `${where}.${attribute.name}` : attribute.name);
    if (read !== undefined) out[attribute.name] = read;
  }
  return out;
}

/** The attributes of `body` for the type's core schema and each extension (under its URN), normalized. */
export function readResource(type: ResourceType, body: Json): Json {
  const out = normalize(type.core.attributes, body);
  for (const extension of type.extensions) {
    const key = keyOf(body, extension.id);
    if (key === undefined || body[key] === null) continue;
    if (!isObject(body[key])) throw invalidValue(`${extension.id} is an object of its attributes`);
    const read = normalize(extension.attributes, body[key]);
    if (Object.keys(read).length) out[extension.id] = read;
  }
  return out;
}

/** The weak ETag of a representation (RFC 7644 §3.14): it changes with anything the resource shows. */
export function versionOf(resource: Json): string {
  return `W/"${createHash('sha256').update(JSON.stringify(resource)).digest('base64url').slice(0, 22)}"`;
}

/**
 * `resource` with only the attributes named (and `id` and `schemas`, which are always returned), or
 * without the excluded ones (RFC 7644 §3.4.2.5). Names are as in filters: "userName",
 * "name.givenName", "urn:…:enterprise:2.0:User:department".
 */
export function project(type: ResourceType, resource: Json, attributes: string[] | undefined, excluded: string[] | undefined): Json {
  if (attributes?.length) {
    const out: Json = { schemas: resource.schemas, id: resource.id };
    for (const raw of attributes) {
      const urn = extensionNamed(type, raw);
      if (urn === undefined) copyPath(type, resource, out, raw);
      else if (resource[urn] !== undefined) out[urn] = structuredClone(resource[urn]);
    }
    return out;
  }
  if (excluded?.length) {
    const out = structuredClone(resource);
    for (const raw of excluded) {
      const urn = extensionNamed(type, raw);
      if (urn !== undefined) delete out[urn];
      const path = resolvePath(type, raw);
      if (!path || path.top.returned === 'always') continue;
      const holder = path.topPath.length === 2 ? out[path.topPath[0]!] : out;
      if (!isObject(holder)) continue;
      const value = holder[path.top.name];
      if (!path.sub) {
        delete holder[path.top.name];
      } else if (isObject(value)) {
        delete value[path.sub.name];
      } else if (Array.isArray(value)) {
        for (const e of value) if (isObject(e)) delete e[path.sub.name];
      }
    }
    return withoutEmptyExtensions(type, out);
  }
  return resource;
}

/** An extension whose attributes were all left out is no longer one the resource has (its `schemas` say so). */
function withoutEmptyExtensions(type: ResourceType, out: Json): Json {
  for (const { id } of type.extensions) {
    if (isObject(out[id]) && Object.keys(out[id]).length === 0) delete out[id];
    if (out[id] === undefined && Array.isArray(out.schemas)) out.schemas = out.schemas.filter((s) => s !== id);
  }
  return out;
}

/** An extension's URN names its whole object (RFC 7643 §3.3), as a PATCH path does. */
const extensionNamed = (type: ResourceType, raw: string): string | undefined =>
  type.extensions.find((e) => e.id.toLowerCase() === raw.toLowerCase())?.id;

function copyPath(type: ResourceType, from: Json, to: Json, raw: string): void {
  const path = resolvePath(type, raw);
  if (!path) return;
  const source = path.topPath.length === 2 ? from[path.topPath[0]!] : from;
  if (!isObject(source) || source[path.top.name] === undefined) return;
  let target = to;
  if (path.topPath.length === 2) {
    const urn = path.topPath[0]!;
    target = isObject(to[urn]) ? to[urn] : (to[urn] = {});
  }
  const value = source[path.top.name];
  if (!path.sub) {
    target[path.top.name] = value;
    return;
  }
  const sub = path.sub.name;
  if (Array.isArray(value)) {
    const had = Array.isArray(target[path.top.name]) ? (target[path.top.name] as Json[]) : undefined;
    target[path.top.name] = value.map((e, i) => ({
      ...(had?.[i] ?? {}),
      ...(isObject(e) && e[sub] !== undefined ? { [sub]: e[sub] } : {}),
    }));
  } else if (isObject(value) && value[sub] !== undefined) {
    const had = target[path.top.name];
    target[path.top.name] = { ...(isObject(had) ? had : {}), [sub]: value[sub] };
  }
}
