// What a kept refusal holds of its request (./record.ts): a bounded excerpt. The
// request object carries what the caller sent — a query of the request line's whole
// length, an AuthZEN context of the body's — and a refusal is kept for a day: kept
// whole, 50 a second of them grow the table by gigabytes an hour. So each string
// (and key) is cut to EXCERPT_LIMITS.stringChars, nesting to .depth, and the whole
// to .recordChars characters of JSON; every cut is named (a path and what was left
// out), so that nobody — `boxauth explain` first — takes an excerpt for the request.

export interface ExcerptLimits {
  /** Characters of one string or key. */
  stringChars: number;
  /** Characters of the excerpt's JSON, all of it. */
  recordChars: number;
  /** Levels of objects and arrays; deeper ones are left out. */
  depth: number;
  /** Cuts named; past these, one more line counts the rest. */
  cutsNamed: number;
}

export const EXCERPT_LIMITS: ExcerptLimits = { stringChars: 256, recordChars: 4096, depth: 8, cutsNamed: 20 };

export interface Excerpt {
  value: unknown;
  /** What was cut, as paths from `name` (empty: the excerpt is the whole value). */
  cut: string[];
}

/** The longest a JSON number writes (-1.2345678901234567e-308): a value always fits after this much room. */
const SCALAR_ROOM = 24;

/** At most `n` UTF-16 units of `s`, never half of a surrogate pair. */
function shorten(s: string, n: number): string {
  const t = s.slice(0, Math.max(0, n));
  return /[\uD800-\uDBFF]$/.test(t) ? t.slice(0, -1) : t;
}

/**
 * What PostgreSQL cannot keep in jsonb — the character NUL ("unsupported Unicode escape sequence")
 * and half of a surrogate pair — which a caller can send in a JSON-RPC tool name ("\u0000"): one
 * such string would fail the insert of the whole batch of refusals it is written with, others'
 * refusals lost with the caller's own.
 */
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** `s` as PostgreSQL can keep it: each unstorable character replaced by U+FFFD, as a decoder replaces what it cannot read. */
const storable = (s: string): string => s.replace(UNSTORABLE, '\uFFFD');

/** How a key reads in a path: short, and quoted when it is not a plain name. */
function keyInPath(key: string): string {
  const shown = key.length > 32 ? `${shorten(key, 32)}…` : key;
  return /^[A-Za-z_$][\w$-]*$/.test(key) ? `.${shown}` : `[${JSON.stringify(shown)}]`;
}

/** A bounded excerpt of the JSON value `value` (named `name` in the cuts' paths): see the file's comment. */
export function excerpt(value: unknown, name: string, limits: ExcerptLimits = EXCERPT_LIMITS): Excerpt {
  const cut: string[] = [];
  let room = limits.recordChars;

  const walk = (v: unknown, path: string, depth: number): unknown => {
    if (typeof v === 'string') {
      let s = storable(v.length > limits.stringChars ? shorten(v, limits.stringChars) : v);
      const over = JSON.stringify(s).length - room;
      if (over > 0) s = shorten(s, s.length - over); // escapes make JSON longer than the string, never shorter
      if (s.length < v.length) cut.push(`${path}: ${s.length} of ${v.length} characters kept`);
      room -= JSON.stringify(s).length;
      return s;
    }
    if (v === null || typeof v !== 'object') {
      const json = JSON.stringify(v) ?? 'null';
      room -= json.length;
      return JSON.parse(json) as unknown;
    }
    room -= 2; // the brackets
    if (depth >= limits.depth) {
      cut.push(`${path}: deeper than ${limits.depth} levels, left out`);
      return Array.isArray(v) ? [] : {};
    }
    const entries: [string, unknown][] = Array.isArray(v) ? v.map((item, i) => [String(i), item]) : Object.entries(v);
    const kept: [string, unknown][] = [];
    for (const [i, [key, item]] of entries.entries()) {
      if (item === undefined && !Array.isArray(v)) continue; // as JSON leaves it out
      const child = Array.isArray(v) ? `${path}[${key}]` : `${path}${keyInPath(key)}`;
      if (!Array.isArray(v) && key.length > limits.stringChars) {
        cut.push(`${child}: a key of ${key.length} characters, left out`);
        continue;
      }
      const keyRoom = (Array.isArray(v) ? 0 : JSON.stringify(key).length + 1) + (kept.length ? 1 : 0);
      if (room < keyRoom + SCALAR_ROOM) {
        cut.push(`${path}: ${entries.length - i} of ${entries.length} entries left out`);
        break;
      }
      room -= keyRoom;
      kept.push([storable(key), walk(item, child, depth + 1)]);
    }
    // fromEntries defines own properties: a key "__proto__" stays a key.
    return Array.isArray(v) ? kept.map(([, item]) => item) : Object.fromEntries(kept);
  };

  const out = walk(value, name, 0);
  if (cut.length > limits.cutsNamed) cut.splice(limits.cutsNamed - 1, Infinity, `and ${cut.length - limits.cutsNamed + 1} more cuts`);
  return { value: out, cut };
}
