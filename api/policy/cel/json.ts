// A CEL value as JSON carries it, for a claim an admin shapes (../claims.ts): int and uint as
// numbers while they are exact, lists and maps as arrays and objects. What JSON cannot carry
// (bytes, a timestamp, a duration, an integer beyond 2^53, a map key that is not a string or that
// names a JavaScript object's prototype) is undefined.
import { isCelList, isCelMap, isCelUint } from '@bufbuild/cel';

const OBJECT_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

const exact = (n: bigint): number | undefined => (Number.isSafeInteger(Number(n)) ? Number(n) : undefined);

function listOf(items: Iterable<unknown>): unknown[] | undefined {
  const out: unknown[] = [];
  for (const item of items) {
    const json = celToJson(item);
    if (json === undefined) return undefined;
    out.push(json);
  }
  return out;
}

function objectOf(entries: Iterable<[unknown, unknown]>): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = {};
  for (const [key, member] of entries) {
    const json = celToJson(member);
    if (typeof key !== 'string' || OBJECT_KEYS.has(key) || json === undefined) return undefined;
    out[key] = json;
  }
  return out;
}

export function celToJson(value: unknown): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value === 'bigint') return exact(value);
  if (isCelUint(value)) return exact(value.value);
  if (isCelList(value) || Array.isArray(value)) return listOf(value as Iterable<unknown>);
  if (isCelMap(value)) return objectOf(value as Iterable<[unknown, unknown]>);
  // A value of the bindings handed back as it was (an object of the person's data).
  if (typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) return objectOf(Object.entries(value));
  return undefined;
}
