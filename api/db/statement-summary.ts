// What a statement's span is named by (api/tracing.ts statementSpan): its operation and first
// table, read from the statement's text (`INSERT sessions`, `SELECT users`). Only keywords and
// identifiers outside parentheses and quotes are read: a literal or a parameter ($1) of the text is
// never part of it, so a statement's hashes, codes and tokens never reach a span. A statement
// WITH common table expressions is named by its main statement (what follows them).

export interface StatementSummary {
  operation: string;
  table?: string;
}

/** Leading comments and blanks, before the statement's first keyword. */
const LEADING = /^(?:\s+|--[^\n]*\n?|\/\*[\s\S]*?\*\/)*/;
/** The first table named after INTO, UPDATE, TABLE or FROM; not a function (`FROM unnest(…)`). */
const TABLE = /\b(?:into|update|table)\s+([a-z_][\w$]*(?:\.[a-z_][\w$]*)?)|\bfrom\s+([a-z_][\w$]*(?:\.[a-z_][\w$]*)?)\b(?!\s*[(.])/i;
/** The main statement after a WITH's expressions. */
const MAIN = /\b(select|insert|update|delete|merge)\b/i;

/** The text with what is inside parentheses and quotes blanked (the parentheses kept). */
function outermost(text: string): string {
  let depth = 0;
  let quote = '';
  let out = '';
  for (const c of text) {
    if (quote) {
      if (c === quote) quote = '';
      out += ' ';
    } else if (c === "'" || c === '"') {
      quote = c;
      out += ' ';
    } else if (c === '(') {
      if (depth++ === 0) out += c;
      else out += ' ';
    } else if (c === ')') {
      if (--depth === 0) out += c;
      else out += ' ';
    } else {
      out += depth > 0 ? ' ' : c;
    }
  }
  return out;
}

/** Summaries by text: the store's statements are a few hundred constants. */
const known = new Map<string, StatementSummary>();
const KNOWN_MAX = 1000;

export function summarizeStatement(text: string): StatementSummary {
  const cached = known.get(text);
  if (cached) return cached;
  let body = outermost(text.replace(LEADING, ''));
  let operation = (/^[a-z]+/i.exec(body)?.[0] ?? 'statement').toUpperCase();
  const main = operation === 'WITH' ? MAIN.exec(body) : null;
  if (main) {
    operation = main[1]!.toUpperCase();
    body = body.slice(main.index);
  }
  const found = TABLE.exec(body);
  const table = found?.[1] ?? found?.[2];
  const summary = table ? { operation, table } : { operation };
  if (known.size >= KNOWN_MAX) known.clear();
  known.set(text, summary);
  return summary;
}

/** The text of what pg.Client.query was given: a string, a config ({ text }), a submittable. */
export function statementText(first: unknown): string {
  if (typeof first === 'string') return first;
  const text = (first as { text?: unknown } | null)?.text;
  return typeof text === 'string' ? text : '';
}
