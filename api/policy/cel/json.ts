// A CEL value as JSON carries it, for a claim an admin shapes (../claims.ts): int and uint as
// numbers while they are exact, lists and maps as arrays and objects. What JSON cannot carry
// (bytes, a timestamp, a duration, an integer beyond 2^53, a map key that is not a string or that
// names a JavaScript object's prototype) is undefined. A budget bounds the JSON text's length as the
// value is converted, never after: a list of 40,000 references to one object is small as a CEL value
// and hundreds of megabytes as JSON.
import { cel } from './library.js';

const OBJECT_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

const exact = (n: bigint): number | undefined => (Number.isSafeInteger(Number(n)) ? Number(n) : undefined);

/** What is left of the JSON text's length; the conversion stops (undefined) once it is spent. */
export interface JsonBudget {
  left: number;
}

/** Spends `n` characters of `budget`; false once it is spent. */
const spend = (budget: JsonBudget, n: number): boolean => (budget.left -= n) >= 0;

function listOf(items: Iterable<unknown>, budget: JsonBudget): unknown[] | undefined {
  const out: unknown[] = [];
  if (!spend(budget, 2)) return undefined;
  for (const item of items) {
    const json = spend(budget, 1) ? celToJson(item, budget) : undefined;
    if (json === undefined) return undefined;
    out.push(json);
  }
  return out;
}

function objectOf(entries: Iterable<[unknown, unknown]>, budget: JsonBudget): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = {};
  if (!spend(budget, 2)) return undefined;
  for (const [key, member] of entries) {
    if (typeof key !== 'string' || OBJECT_KEYS.has(key) || !spend(budget, key.length + 4)) return undefined;
    const json = celToJson(member, budget);
    if (json === undefined) return undefined;
    out[key] = json;
  }
  return out;
}

/**
 * `value` as JSON, or undefined when JSON cannot carry it or its text would be longer than the
 * budget allows (then `budget.left` is below 0: the caller tells the two apart by it).
 */
export function celToJson(value: unknown, budget: JsonBudget = { left: Infinity }): unknown {
  if (value === null || typeof value === 'boolean') return spend(budget, 5) ? value : undefined;
  // A string's JSON is at least its length and its quotes.
  if (typeof value === 'string') return spend(budget, value.length + 2) ? value : undefined;
  if (typeof value === 'number') return Number.isFinite(value) && spend(budget, String(value).length) ? value : undefined;
  if (typeof value === 'bigint') return spend(budget, String(value).length) ? exact(value) : undefined;
  if (cel().isCelUint(value)) return spend(budget, String(value.value).length) ? exact(value.value) : undefined;
  if (cel().isCelList(value) || Array.isArray(value)) return listOf(value as Iterable<unknown>, budget);
  if (cel().isCelMap(value)) return objectOf(value as Iterable<[unknown, unknown]>, budget);
  // A value of the bindings handed back as it was (an object of the person's data).
  if (typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) return objectOf(Object.entries(value), budget);
  return undefined;
}
