// PATCH (RFC 7644 §3.5.2) as a pure function: the operations applied, in order, to the resource
// as the box shows it, giving the resource as it would be; the caller then writes that as a PUT
// would, under the record's lock, so that a PATCH and a PUT are checked by the same rules. What
// directories send beyond the RFC is read here: Entra ID's capitalised ops ("Replace") and
// URN-prefixed paths, Okta's and Entra ID's ops without a path whose value holds paths as keys.
import { PATCH_OP, type Attribute, type ResourceType } from './schemas.js';
import { evaluate, parsePatchPath, type PatchPath } from './filter.js';
import { ScimError, invalidValue, mutability, noTarget } from './errors.js';
import type { ScimFilter } from '../../store/scim-search.js';

export type Json = Record<string, unknown>;
type Op = 'add' | 'remove' | 'replace';

/** At most this many operations in one PATCH. */
export const MAX_OPERATIONS = 1000;

const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The key of `obj` that spells `name` in any case (RFC 7643 §2.1), or undefined. */
export function keyOf(obj: Json, name: string): string | undefined {
  return Object.keys(obj).find((k) => k.toLowerCase() === name.toLowerCase());
}

function setKey(obj: Json, name: string, value: unknown): void {
  const old = keyOf(obj, name);
  if (old !== undefined) delete obj[old];
  obj[name] = value;
}

function deleteKey(obj: Json, name: string): void {
  const old = keyOf(obj, name);
  if (old !== undefined) delete obj[old];
}

/** The object that holds the top attribute: the resource, or its extension's object (made when `make`). */
function holder(resource: Json, path: PatchPath, make: boolean): Json | undefined {
  if (path.topPath.length === 1) return resource;
  const urn = path.topPath[0]!;
  const existing = resource[keyOf(resource, urn) ?? urn];
  if (isObject(existing)) return existing;
  if (!make) return undefined;
  const made: Json = {};
  setKey(resource, urn, made);
  return made;
}

/** The equality tests of a filter made only of `eq` joined by `and`: an element that would match it. */
function elementOf(filter: ScimFilter): Json | undefined {
  if (filter.op === 'and') {
    const left = elementOf(filter.left);
    const right = elementOf(filter.right);
    return left && right && { ...left, ...right };
  }
  if (filter.op === 'eq' && filter.attr.path.length === 1) return { [filter.attr.path[0]!]: filter.value };
  return undefined;
}

function checkWritable(path: PatchPath, raw: string): void {
  const target = path.sub ?? path.top;
  if (path.top.mutability === 'readOnly' || target.mutability === 'readOnly')
    throw mutability(
      `"${raw}" is read-only: ${path.top.name === 'groups' ? "change a person's groups through the Group's members" : 'the box sets it'}`,
    );
}

/** The elements of a multi-valued attribute that `value` (one or a list) names. */
const asList = (value: unknown): unknown[] => (Array.isArray(value) ? value : [value]);

/** An element's `value` as text, when it has one. */
const valueKey = (e: unknown): string | undefined => {
  const v = isObject(e) ? e[keyOf(e, 'value') ?? 'value'] : undefined;
  return v === undefined ? undefined : String(v);
};

/**
 * Adds elements to a multi-valued attribute, leaving out those whose `value` it already holds (a
 * member added twice is once). The values held are a set: a scan of the list for each element
 * added made one PATCH of some 15,000 members hold the process for seconds.
 */
function appendElements(list: unknown[], value: unknown): unknown[] {
  const out = [...list];
  const held = new Set(out.map(valueKey).filter((v) => v !== undefined));
  for (const element of asList(value)) {
    const v = valueKey(element);
    if (v !== undefined && held.has(v)) continue;
    if (v !== undefined) held.add(v);
    out.push(element);
  }
  return out;
}

function applyAt(resource: Json, op: Op, raw: string, path: PatchPath, value: unknown): void {
  checkWritable(path, raw);
  const obj = holder(resource, path, op !== 'remove');
  if (!obj) return;
  const current = obj[keyOf(obj, path.top.name) ?? path.top.name];
  const { top, sub, filter } = path;
  if (top.multiValued) return applyToList(obj, op, raw, path, Array.isArray(current) ? current : [], value);
  if (sub) {
    if (op === 'remove') {
      if (isObject(current)) deleteKey(current, sub.name);
      return;
    }
    setKey(obj, top.name, { ...(isObject(current) ? current : {}), [sub.name]: value });
    return;
  }
  if (filter) throw invalidValue(`"${raw}": only multi-valued attributes take a filter`);
  if (op === 'remove') {
    if (top.required) throw mutability(`"${top.name}" is required: it can be replaced, not removed`);
    // Unassigned, a person would be neither on nor off: the directory says which.
    if (top.name === 'active' && path.topPath.length === 1)
      throw invalidValue('"active" can be replaced with true or false, not removed: a removal would turn the person on or off unasked');
    return deleteKey(obj, top.name);
  }
  // A complex attribute takes the sub-attributes given and keeps the others (RFC 7644 §3.5.2.1, §3.5.2.3).
  if (top.type === 'complex' && isObject(value) && isObject(current)) return setKey(obj, top.name, { ...current, ...value });
  setKey(obj, top.name, value);
}

function applyToList(obj: Json, op: Op, raw: string, path: PatchPath, list: unknown[], value: unknown): void {
  const { top, sub, filter } = path;
  const matches = (e: unknown): boolean => (filter ? evaluate(filter, e) : true);
  if (op === 'remove') {
    if (!filter && !sub) {
      // Entra ID removes members by value: {"op":"Remove","path":"members","value":[{"value":"<id>"}]}.
      if (value !== undefined) {
        const gone = new Set(asList(value).map((e) => (isObject(e) ? String(e[keyOf(e, 'value') ?? 'value']) : String(e))));
        return setKey(
          obj,
          top.name,
          list.filter((e) => !(isObject(e) && gone.has(String(e[keyOf(e, 'value') ?? 'value'])))),
        );
      }
      return deleteKey(obj, top.name);
    }
    const kept = sub
      ? list.map((e) => {
          if (!matches(e) || !isObject(e)) return e;
          const copy = { ...e };
          deleteKey(copy, sub.name);
          return copy;
        })
      : list.filter((e) => !matches(e));
    return setKey(obj, top.name, kept);
  }
  if (!filter && !sub) {
    if (op === 'add') return setKey(obj, top.name, appendElements(list, value));
    return setKey(obj, top.name, asList(value));
  }
  const hits = list.filter(matches);
  if (!hits.length) {
    // Entra ID sets `emails[type eq "work"].value` on a person with no work address: the element is made.
    const made = filter && elementOf(filter);
    if (!made) throw noTarget(`"${raw}" matches no value of ${top.name}`);
    return setKey(obj, top.name, [...list, sub ? { ...made, [sub.name]: value } : { ...made, ...(isObject(value) ? value : {}) }]);
  }
  setKey(
    obj,
    top.name,
    list.map((e) => {
      if (!matches(e)) return e;
      if (sub) return { ...(isObject(e) ? e : {}), [sub.name]: value };
      return isObject(value) ? { ...(isObject(e) ? e : {}), ...value } : value;
    }),
  );
}

/** An op without a path (Okta, Entra ID): its value's keys are attributes, or paths, or an extension's URN holding its own. */
function applyValueObject(type: ResourceType, resource: Json, op: Op, value: unknown): void {
  if (!isObject(value)) throw invalidValue(`an "${op}" without a path takes an object of attributes as its value`);
  for (const [key, v] of Object.entries(value)) {
    const extension = type.extensions.find((e) => e.id.toLowerCase() === key.toLowerCase());
    if (extension && isObject(v)) {
      for (const [name, inner] of Object.entries(v)) applyPath(type, resource, op, `${extension.id}:${name}`, inner);
      continue;
    }
    if (key.toLowerCase() === 'schemas') continue;
    // Okta sends the id along with what changes: the same id changes nothing; another is refused.
    if (key.toLowerCase() === 'id' && String(v) === String(resource.id)) continue;
    applyPath(type, resource, op, key, v);
  }
}

function applyPath(type: ResourceType, resource: Json, op: Op, raw: string, value: unknown): void {
  const extension = type.extensions.find((e) => e.id.toLowerCase() === raw.toLowerCase());
  if (extension) return applyToExtension(type, resource, op, extension.id, value);
  applyAt(resource, op, raw, parsePatchPath(type, raw), value);
}

/**
 * A path that is an extension's URN names its container (RFC 7643 §3.3): remove drops it, replace
 * puts the value in its place, add adds the value's attributes to it (a `schemas` inside is no attribute).
 */
function applyToExtension(type: ResourceType, resource: Json, op: Op, urn: string, value: unknown): void {
  if (op === 'remove') return deleteKey(resource, urn);
  if (!isObject(value)) throw invalidValue(`"${urn}" takes an object of its attributes`);
  if (op === 'replace') deleteKey(resource, urn);
  for (const [name, inner] of Object.entries(value)) {
    if (name.toLowerCase() !== 'schemas') applyPath(type, resource, op, `${urn}:${name}`, inner);
  }
}

/** Reads a PatchOp message (RFC 7644 §3.5.2) and applies it to a copy of `resource`; a ScimError 400 when it is not one. */
export function applyPatch(type: ResourceType, resource: Json, body: unknown): Json {
  if (!isObject(body)) throw new ScimError(400, 'invalidSyntax', 'a PATCH body is a PatchOp message (a JSON object)');
  const schemas = body[keyOf(body, 'schemas') ?? 'schemas'];
  if (!Array.isArray(schemas) || !schemas.some((s) => typeof s === 'string' && s.toLowerCase() === PATCH_OP.toLowerCase()))
    throw new ScimError(400, 'invalidSyntax', `a PATCH body's "schemas" must hold "${PATCH_OP}"`);
  const operations = body[keyOf(body, 'Operations') ?? 'Operations'];
  if (!Array.isArray(operations) || !operations.length)
    throw new ScimError(400, 'invalidSyntax', 'a PATCH body needs "Operations", a list');
  if (operations.length > MAX_OPERATIONS) throw new ScimError(400, 'invalidSyntax', `at most ${MAX_OPERATIONS} operations in one PATCH`);
  const result = structuredClone(resource);
  for (const [i, operation] of operations.entries()) {
    if (!isObject(operation)) throw new ScimError(400, 'invalidSyntax', `operation ${i} is not an object`);
    const rawOp = operation[keyOf(operation, 'op') ?? 'op'];
    const op = typeof rawOp === 'string' ? rawOp.toLowerCase() : undefined;
    if (op !== 'add' && op !== 'remove' && op !== 'replace')
      throw new ScimError(400, 'invalidSyntax', `operation ${i}: "op" must be add, remove or replace`);
    const path = operation[keyOf(operation, 'path') ?? 'path'];
    const value = operation[keyOf(operation, 'value') ?? 'value'];
    if (path !== undefined && typeof path !== 'string') throw new ScimError(400, 'invalidPath', `operation ${i}: "path" must be a string`);
    if (op !== 'remove' && value === undefined) throw new ScimError(400, 'invalidSyntax', `operation ${i}: "${op}" needs a value`);
    if (path === undefined || path === '') {
      if (op === 'remove') throw noTarget(`operation ${i}: "remove" needs a path`);
      applyValueObject(type, result, op, value);
    } else applyPath(type, result, op, path, value);
  }
  return result;
}

export type { Attribute };
