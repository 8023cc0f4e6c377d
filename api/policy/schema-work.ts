// What a json-schema policy's validation does, counted before it runs. ajv compiles a schema to
// code that counts nothing, and a schema's work is not bounded by its size: a `$ref` that recurses
// through two branches of an `anyOf` doubles its work at each level of the value it validates
// (issue 81: 22–24 nested empty lists, 0.2–3.2 s of the event loop for one evaluation), and
// references to references expand to 2^k applications with no recursion at all.
//
// So each evaluation first walks the schema over the value as a validator applies it — every
// keyword of every (sub)schema applied to every value it reaches, through every branch of allOf,
// anyOf, oneOf, not and if/then/else, following each $ref — charging a unit for each
// (./budget.ts). It is an upper bound of ajv's work (ajv stops at the first branch or error that
// decides), and the meter stops it, with the policy, at its budget: ajv never starts a validation
// the walk did not pay for. Patterns are not charged here: each match charges its own bound when
// ajv runs it (./regex.ts).
import { charge, OverBudget } from './budget.js';

type Schema = unknown;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * How deep the walk may go, subschemas and references included: a reference that leads back to
 * itself without reaching into the value (`{"$ref": "#"}`) would otherwise go on until the stack
 * ends. The deepest value a body holds (api/input.ts) with a few subschemas a level stays far under it.
 */
const MAX_DEPTH = 1000;

/** The subschema a `$ref` names: a JSON pointer within the policy's own schema (checkReferences refuses any other). */
export function resolve(root: Schema, ref: string): Schema {
  if (!ref.startsWith('#')) return undefined;
  let at: unknown = root;
  const pointer = decodeURIComponent(ref.slice(1));
  if (pointer === '') return at;
  if (!pointer.startsWith('/')) return undefined;
  for (const token of pointer.slice(1).split('/')) {
    const key = token.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(at)) at = /^(0|[1-9]\d*)$/.test(key) ? at[Number(key)] : undefined;
    else if (isObject(at) && Object.hasOwn(at, key)) at = at[key];
    else return undefined;
  }
  return at;
}

/**
 * Problems that would let a schema's work escape the walk: a `$ref` it cannot follow (one to
 * another document, or through an `$id`, which change what the reference means), or an `$id`
 * below the top (which changes what the references under it resolve against).
 */
export function referenceErrors(root: Schema): string[] {
  const problems: string[] = [];
  const escaped = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1');
  const visit = (schema: unknown, at: string): void => {
    if (!isObject(schema)) return;
    for (const [key, value] of Object.entries(schema)) {
      const path = `${at}/${escaped(key)}`;
      if (key === '$ref') {
        if (typeof value !== 'string' || resolve(root, value) === undefined)
          problems.push(
            `the $ref at ${at || '/'} is not a JSON pointer to a part of this schema ("#/…"), the only references the json-schema engine follows`,
          );
      } else if (key === '$id' || key === 'id') {
        if (at !== '') problems.push(`${path}: an $id below the top of the schema is not one the json-schema engine applies`);
      } else if (SCHEMA_MAPS.has(key) && isObject(value)) {
        for (const [name, sub] of Object.entries(value)) visit(sub, `${path}/${escaped(name)}`);
      } else if (Array.isArray(value) && !LITERALS.has(key)) {
        value.forEach((sub, i) => visit(sub, `${path}/${i}`));
      } else if (!LITERALS.has(key)) visit(value, path);
    }
  };
  visit(root, '');
  return problems;
}

/** Keywords whose value maps names (of properties, of definitions) to schemas. */
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', 'definitions', '$defs', 'dependencies']);
/** Keywords whose value is data, never a schema. */
const LITERALS = new Set(['enum', 'const', 'default', 'examples', 'required']);

/** The values in `v`, one unit each, charged as they are counted. */
function values(v: unknown): number {
  charge(1);
  if (v === null || typeof v !== 'object') return 1;
  let n = 1;
  for (const item of Array.isArray(v) ? v : Object.values(v)) n += values(item);
  return n;
}

/** The values of a literal of the schema (a const, an enum), counted once per literal. */
const literalSizes = new WeakMap<object, number>();
function literalSize(v: unknown): number {
  if (v === null || typeof v !== 'object') return 1;
  let n = literalSizes.get(v);
  if (n === undefined) {
    n = 1 + (Array.isArray(v) ? v : Object.values(v)).reduce((sum: number, item) => sum + literalSize(item), 0);
    literalSizes.set(v, n);
  }
  return n;
}

const SCALAR_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'null']);

/** Whether ajv checks uniqueItems by a map of the items (one step each) rather than comparing every pair: its items declare scalar types only. */
function uniqueByMap(items: unknown): boolean {
  if (!isObject(items)) return false;
  const types = Array.isArray(items.type) ? items.type : items.type === undefined ? [] : [items.type];
  return types.length > 0 && types.every((t) => typeof t === 'string' && SCALAR_TYPES.has(t));
}

/** Charges what applying `schema` (within `root`) to `value` may cost, as it goes; throws OverBudget past the evaluation's limit. */
export function chargeValidation(root: Schema, value: unknown): void {
  apply(root, root, value, 0);
}

/** A schema's keywords, read once: the walk runs at every evaluation, over schemas that do not change once compiled. */
const keywordsOf = (() => {
  const read = new WeakMap<object, [string, unknown][]>();
  return (schema: Record<string, unknown>): [string, unknown][] => {
    let keywords = read.get(schema);
    if (!keywords) read.set(schema, (keywords = Object.entries(schema)));
    return keywords;
  };
})();

/** What `ref` names in `root`, resolved once. */
const resolved = (() => {
  const read = new WeakMap<object, Map<string, Schema>>();
  return (root: Schema, ref: string): Schema => {
    if (!isObject(root)) return resolve(root, ref);
    let refs = read.get(root);
    if (!refs) read.set(root, (refs = new Map()));
    if (!refs.has(ref)) refs.set(ref, resolve(root, ref));
    return refs.get(ref);
  };
})();

function apply(root: Schema, schema: Schema, value: unknown, depth: number): void {
  charge(1);
  if (!isObject(schema)) return;
  if (depth > MAX_DEPTH) throw new OverBudget();
  const deeper = depth + 1;
  const each = (sub: unknown, on: unknown): void => apply(root, sub, on, deeper);
  for (const [keyword, arg] of keywordsOf(schema)) {
    charge(1);
    switch (keyword) {
      case '$ref':
        if (typeof arg === 'string') each(resolved(root, arg), value);
        break;
      case 'not':
      case 'if':
      case 'then':
      case 'else':
        each(arg, value);
        break;
      case 'allOf':
      case 'anyOf':
      case 'oneOf':
        if (Array.isArray(arg)) for (const sub of arg) each(sub, value);
        break;
      case 'properties':
        if (isObject(arg) && isObject(value))
          for (const [key, sub] of Object.entries(arg)) if (Object.hasOwn(value, key)) each(sub, value[key]);
        break;
      case 'patternProperties':
        // Which keys a pattern matches is ajv's to find (each match charged by ./regex.ts): every key, through every one.
        if (isObject(arg) && isObject(value)) for (const sub of Object.values(arg)) for (const v of Object.values(value)) each(sub, v);
        break;
      case 'additionalProperties':
        if (isObject(value)) for (const v of Object.values(value)) each(arg, v);
        break;
      case 'propertyNames':
        if (isObject(value)) for (const key of Object.keys(value)) each(arg, key);
        break;
      case 'dependencies':
        if (isObject(arg) && isObject(value))
          for (const [key, dependency] of Object.entries(arg)) {
            if (!Object.hasOwn(value, key)) continue;
            if (Array.isArray(dependency)) charge(dependency.length);
            else each(dependency, value);
          }
        break;
      case 'items':
        if (Array.isArray(value)) {
          if (Array.isArray(arg)) arg.forEach((sub, i) => i < value.length && each(sub, value[i]));
          else for (const v of value) each(arg, v);
        }
        break;
      case 'additionalItems':
        if (Array.isArray(value) && Array.isArray(schema.items)) for (const v of value.slice(schema.items.length)) each(arg, v);
        break;
      case 'contains':
        if (Array.isArray(value)) for (const v of value) each(arg, v);
        break;
      case 'uniqueItems':
        // ajv compares every pair of items, each deeply (a pair costs at most the smaller item), unless the items are declared scalars.
        if (arg === true && Array.isArray(value) && value.length > 1)
          charge(uniqueByMap(schema.items) ? value.length : (value.length - 1) * values(value));
        break;
      case 'const':
        charge(literalSize(arg));
        break;
      case 'enum':
        if (Array.isArray(arg)) charge(literalSize(arg));
        break;
      case 'required':
        if (Array.isArray(arg)) charge(arg.length);
        break;
      case 'minLength':
      case 'maxLength':
      case 'format':
        // Counting code points, and a format's check: a step a character, a tenth of a unit as cel-go's strings.
        if (typeof value === 'string') charge(Math.ceil(value.length / 10));
        break;
    }
  }
}
