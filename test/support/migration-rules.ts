// The expand/contract rule read off the text of a migration (test/unit/db/migrations.test.ts):
// while a rolling update runs, the previous release serves the schema this release's migrations
// made, so a migration may only add what the previous release does not notice (expand); what
// it still uses goes a release later (contract), once no release that uses it can be running.
// Pure: SQL text in, findings out. What a text check cannot see is listed in the test's header.

/** One statement of a migration: its code (comments out, string literals emptied) and the comments before it. */
export interface Statement {
  code: string;
  /** The code with its string literals kept (a CHECK's values are literals). */
  text: string;
  comments: string[];
  line: number;
}

/**
 * Splits SQL into statements at top-level semicolons, as PostgreSQL reads it: `--` and `/* *\/`
 * comments, '…' and E'…' literals, "…" identifiers and $tag$…$tag$ bodies (kept: they are code,
 * a function's or a DO block's).
 */
export function statements(sql: string): Statement[] {
  const out: Statement[] = [];
  let code = '';
  let text = '';
  let comments: string[] = [];
  let line = 1;
  let startLine = 1;
  const lineOf = (from: number, to: number): void => {
    for (let k = from; k < to; k++) if (sql[k] === '\n') line++;
  };
  let i = 0;
  while (i < sql.length) {
    const c = sql[i]!;
    const rest = sql.slice(i);
    let end = i + 1;
    if (rest.startsWith('--')) {
      end = sql.indexOf('\n', i);
      if (end < 0) end = sql.length;
      comments.push(sql.slice(i + 2, end).trim());
      code += ' ';
      text += ' ';
    } else if (rest.startsWith('/*')) {
      let depth = 0;
      for (end = i; end < sql.length; end++) {
        if (sql.startsWith('/*', end)) {
          depth++;
          end++;
        } else if (sql.startsWith('*/', end) && --depth === 0) break;
        else if (sql.startsWith('*/', end)) end++;
      }
      end = Math.min(end + 2, sql.length);
      comments.push(sql.slice(i + 2, end - 2).trim());
      code += ' ';
      text += ' ';
    } else if (c === "'" || (/[eE]/.test(c) && sql[i + 1] === "'" && !/\w/.test(sql[i - 1] ?? ''))) {
      const escapes = c !== "'";
      for (end = sql.indexOf("'", i) + 1; end < sql.length; end++) {
        if (escapes && sql[end] === '\\') end++;
        else if (sql[end] === "'" && sql[end + 1] === "'") end++;
        else if (sql[end] === "'") break;
      }
      end++;
      code += "''";
      text += sql.slice(i, end);
    } else if (c === '"') {
      for (end = i + 1; end < sql.length && !(sql[end] === '"' && sql[end + 1] !== '"'); end += sql[end] === '"' ? 2 : 1);
      end++;
      code += sql.slice(i, end);
      text += sql.slice(i, end);
    } else if (/^\$([A-Za-z_]\w*)?\$/.test(rest) && !/[\w$]/.test(sql[i - 1] ?? '')) {
      const tag = /^\$([A-Za-z_]\w*)?\$/.exec(rest)![0];
      const close = sql.indexOf(tag, i + tag.length);
      end = close < 0 ? sql.length : close + tag.length;
      code += sql.slice(i, end);
      text += sql.slice(i, end);
    } else if (c === ';') {
      if (code.trim()) out.push({ code: code.trim(), text: text.trim(), comments, line: startLine });
      code = '';
      text = '';
      comments = [];
    } else {
      if (!code.trim() && !/\s/.test(c)) startLine = line;
      code += c;
      text += c;
    }
    lineOf(i, end);
    i = end;
  }
  if (code.trim()) out.push({ code: code.trim(), text: text.trim(), comments, line: startLine });
  return out;
}

/** What the previous release does that a migration must not break; `tablesReadWithStar`: see `preparedStarTables`. */
export interface PreviousRelease {
  /** Tables the previous release reads through a prepared statement whose result is `*`. */
  tablesReadWithStar: Map<string, string[]>;
  /** Whether `release` names the previous release or one before it (git merge-base --is-ancestor). */
  isAtOrBefore: (release: string) => boolean;
}

export interface Finding {
  file: string;
  line: number;
  rule: string;
  message: string;
}

/** A marker before a contracting statement: `-- contract: <what>, unused since <release>`. */
const CONTRACT_MARKER = /^contract:\s*(.+?),?\s+unused since\s+(\S+?)\.?$/i;
/** A marker before a backfill of a new column: `-- backfill: <how the previous release's rows get it>`. */
const BACKFILL_MARKER = /^backfill:\s*\S.{10,}/i;
/** A marker before a replaced function: `-- replace: <how the previous release still gets what it relied on>`. */
const REPLACE_MARKER = /^replace:\s*\S.{10,}/i;

const IDENT = String.raw`(?:"(?:[^"]|"")+"|[A-Za-z_][\w$]*)`;
const QUALIFIED = String.raw`(?:${IDENT}\.)?(${IDENT})`;
const unquote = (name: string): string => (name.startsWith('"') ? name.slice(1, -1).replace(/""/g, '"') : name.toLowerCase());

/** What each DROP breaks for the release still running. */
const DROPPED: [RegExp, string][] = [
  [/^(TABLE|VIEW|MATERIALIZED VIEW|SEQUENCE|TYPE|DOMAIN|SCHEMA|EXTENSION)\b/i, 'the previous release still reads and writes it'],
  [
    /^(INDEX|CONSTRAINT)\b/i,
    "the previous release's writes may rely on it (ON CONFLICT needs the unique index; its errors name the constraint)",
  ],
  [/^DEFAULT\b/i, "the previous release's INSERTs leave the column out and rely on the default"],
  [/^NOT NULL\b/i, 'the previous release reads the column as never NULL: rows this release writes without it break its reads'],
  [/^(TRIGGER|FUNCTION|PROCEDURE|RULE|POLICY)\b/i, "the previous release's writes and change feed (NOTIFY payloads) depend on it"],
  [/^(IDENTITY|EXPRESSION)\b/i, "the previous release's INSERTs rely on the column filling itself"],
  [/^/, 'the previous release still selects, inserts or updates the column'], // ALTER TABLE … DROP [COLUMN] x
];

/**
 * Every finding of the rule over one migration (`file`: its name, for messages). `checksBefore`:
 * the CHECK constraints the schema holds when it runs (`checksAfter` of the migrations before it),
 * against which a replaced CHECK is proved to only widen.
 */
export function checkMigration(
  file: string,
  sql: string,
  previous: PreviousRelease,
  checksBefore: Map<string, string> = new Map(),
): Finding[] {
  const all = statements(sql);
  const replaced = replacedChecks(all, checksBefore);
  const created = new Set<string>(); // tables this migration creates: anything goes on them
  const added = new Map<string, Set<string>>(); // table → columns this migration adds
  for (const s of all) {
    const table = new RegExp(String.raw`^CREATE\s+(?:UNLOGGED\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?${QUALIFIED}`, 'i').exec(s.code);
    if (table) created.add(unquote(table[1]!));
    const altered = alterTable(s.code);
    if (altered)
      for (const m of altered.body.matchAll(new RegExp(String.raw`\bADD\s+(?:COLUMN\s+)?(?:IF\s+NOT\s+EXISTS\s+)?(${IDENT})`, 'gi'))) {
        if (/^(CONSTRAINT|CHECK|UNIQUE|PRIMARY|FOREIGN|EXCLUDE)$/i.test(m[1]!)) continue;
        added.set(altered.table, (added.get(altered.table) ?? new Set()).add(unquote(m[1]!)));
      }
  }
  const isNew = (table: string): boolean => created.has(table);
  const findings: Finding[] = [];
  for (const s of all) {
    const refuse = (rule: string, message: string, kind: 'contract' | 'backfill' | 'replace' | 'none' = 'contract'): void => {
      if (kind === 'replace' && s.comments.some((c) => REPLACE_MARKER.test(c))) return;
      if ((kind === 'contract' || kind === 'replace') && contractMarked(s, previous, file, findings)) return;
      if (kind === 'backfill' && s.comments.some((c) => BACKFILL_MARKER.test(c))) return;
      findings.push({ file, line: s.line, rule, message });
    };
    let code = s.code.replace(/\s+/g, ' ');
    let altered = alterTable(code);
    if (altered) {
      // A CHECK dropped and added again under its name: fine when proved to only widen, else one finding naming it.
      const kept = actionsOf(altered.body).filter((_, k) => {
        const name = replacedName(actionsOf(alterTable(s.text)!.body)[k]!);
        const replacement = name === undefined ? undefined : replaced.get(`${altered!.table}.${name}`);
        if (replacement === undefined) return true;
        if (replacement.proved === false && replacement.line === s.line && !replacement.reported) {
          replacement.reported = true;
          refuse('constraint', replacement.message);
        }
        return false;
      });
      if (!kept.length) continue;
      code = `ALTER TABLE ${altered.table} ${kept.join(',')}`;
      altered = alterTable(code);
    }
    const onNewTable = altered ? isNew(altered.table) : false;

    const dropped = /\bDROP\s+(.*)$/i.exec(code);
    if (dropped && !onNewTable) {
      const what = dropped[1]!;
      const why = DROPPED.find(([re]) => re.test(what))![1];
      refuse('drop', `DROP ${what.split(/[\s,(]/)[0]!.toUpperCase()}: ${why}`);
    }
    if (/^TRUNCATE\b/i.test(code)) refuse('drop', 'TRUNCATE: the previous release still serves those rows');
    if (/\bRENAME\b/i.test(code)) refuse('rename', 'RENAME: the previous release still uses the old name');
    if (altered && !onNewTable) {
      if (new RegExp(String.raw`\bALTER\s+(?:COLUMN\s+)?${IDENT}\s+(?:SET\s+DATA\s+)?TYPE\b`, 'i').test(altered.body))
        refuse('column-type', "ALTER COLUMN … TYPE: the previous release's statements were planned for the old type, and write it");
      if (/\bSET\s+NOT\s+NULL\b/i.test(altered.body))
        refuse('not-null', "SET NOT NULL: the previous release's INSERTs may leave the column out");
      for (const column of addedColumns(altered.body)) {
        if (/\bNOT\s+NULL\b/i.test(column) && !/\b(DEFAULT|GENERATED)\b/i.test(column))
          refuse(
            'not-null',
            `a new NOT NULL column without a DEFAULT (${column.split(' ')[0]}): the previous release's INSERTs leave it out`,
          );
      }
      if (constrainsOld(altered.body, added.get(altered.table)))
        refuse('constraint', "a new constraint on an existing table: the previous release's writes may violate it (and it cannot name it)");
      if (/\b(ENABLE|DISABLE)\s+(ALWAYS\s+|REPLICA\s+)?TRIGGER\b/i.test(altered.body))
        refuse('trigger', "a trigger turned on or off: the previous release's writes and change feed depend on what its triggers do");
      const star = previous.tablesReadWithStar.get(altered.table);
      if (star && addedColumns(altered.body).length)
        refuse(
          'prepared-star',
          `a new column on ${altered.table}, which the previous release reads with a prepared SELECT * (${star.join(', ')}): ` +
            'those statements fail on every connection that prepared them ("cached plan must not change result type") until its pods restart; ' +
            'add the column a release later (this release names its columns)',
          'none',
        );
    }
    const unique = new RegExp(
      String.raw`^CREATE\s+UNIQUE\s+INDEX\b.*?\bON\s+(?:ONLY\s+)?${QUALIFIED}\s*(?:USING\s+\w+\s*)?\((.*)$`,
      'i',
    ).exec(code);
    if (unique && !isNew(unquote(unique[1]!)) && !onlyColumns(unique[2]!, added.get(unquote(unique[1]!))))
      refuse(
        'constraint',
        "a new unique index over existing columns: the previous release's writes may violate it (and it cannot name it)",
      );
    if (/^CREATE\s+OR\s+REPLACE\b|^ALTER\s+(FUNCTION|PROCEDURE|TRIGGER|VIEW|RULE|POLICY)\b/i.test(code))
      refuse(
        'replace',
        "replaces what the previous release runs or reads (a trigger function's NOTIFY payload is what its change feed parses); " +
          'a replacement that still gives it all it relied on says how in a `-- replace:` comment',
        'replace',
      );
    for (const m of code.matchAll(new RegExp(String.raw`^UPDATE\s+(?:ONLY\s+)?${QUALIFIED}.*?\bSET\s+(.*)$`, 'gi'))) {
      const table = unquote(m[1]!);
      const columns = added.get(table);
      const filled = columns && [...columns].filter((c) => new RegExp(String.raw`(^|[\s,(])"?${c}"?\s*=`, 'i').test(m[2]!));
      if (filled?.length && !isNew(table) && !all.some((t) => triggerOn(t.code, table)))
        refuse(
          'backfill',
          `a new column filled for the rows already there (${table}.${filled.join(', ')}): the rows the previous release writes meanwhile leave it NULL. ` +
            "Derive it in a trigger (then the previous release's writes fill it too), or read NULL as the previous release left it, and say how in a `-- backfill:` comment",
          'backfill',
        );
    }
  }
  return findings;
}

/** A CHECK this migration drops and adds again under the same name (see `replacedChecks`). */
interface Replacement {
  proved: boolean;
  message: string;
  /** The statement that adds it again: where an unproved one is reported. */
  line: number;
  reported?: boolean;
}

/** The name in `DROP CONSTRAINT [IF EXISTS] name` or `ADD CONSTRAINT name CHECK (…)`, one action of an ALTER TABLE. */
function replacedName(action: string): string | undefined {
  const m = new RegExp(
    String.raw`^\s*(?:DROP\s+CONSTRAINT\s+(?:IF\s+EXISTS\s+)?(${IDENT})\s*(?:RESTRICT|CASCADE)?|ADD\s+CONSTRAINT\s+(${IDENT})\s+CHECK\b[\s\S]*)\s*$`,
    'i',
  ).exec(action);
  return m ? unquote((m[1] ?? m[2])!) : undefined;
}

/**
 * The CHECKs a migration drops and adds again under the same name (`table.name` →), each proved
 * to only widen the one before (`widens`) or not. A widened CHECK refuses nothing the previous
 * release writes (its writes kept the narrower one), and its name, which that release's errors
 * may carry, stays.
 */
function replacedChecks(all: Statement[], checksBefore: Map<string, string>): Map<string, Replacement> {
  const dropped = new Set<string>();
  const added = new Map<string, { expression: string; line: number }>();
  for (const s of all) {
    const altered = alterTable(s.text);
    if (!altered) continue;
    for (const action of actionsOf(altered.body)) {
      const name = replacedName(action);
      if (name === undefined) continue;
      const check = checkOf(action);
      if (check) added.set(`${altered.table}.${name}`, { expression: check, line: s.line });
      else dropped.add(`${altered.table}.${name}`);
    }
  }
  const replaced = new Map<string, Replacement>();
  for (const key of dropped) {
    const now = added.get(key);
    if (!now) continue;
    const before = checksBefore.get(key);
    const [table, constraint] = key.split('.');
    const name = `CHECK ${constraint} on ${table}`;
    const message =
      before === undefined
        ? `${name}: no such constraint before this migration, so what it held cannot be compared (a name PostgreSQL chose is <table>_<column>_check)`
        : `${name} replaced by one not proved to only widen it (before: ${before}; now: ${now.expression}): ` +
          "the previous release's writes may break it. Proved: `column IN (…)` or `column = ANY (ARRAY[…])` keeping every value; " +
          'to narrow, make the code keep the narrower one a release first (docs/operations/upgrades.md)';
    replaced.set(key, { proved: before !== undefined && widens(before, now.expression), message, line: now.line });
  }
  return replaced;
}

/** The expression of `… CHECK (expression)` in a table constraint or column definition, without its parentheses. */
function checkOf(text: string): string | undefined {
  const m = /\bCHECK\s*\(/i.exec(text);
  if (!m) return undefined;
  const start = m.index + m[0].length;
  let depth = 1;
  let end = start;
  for (; end < text.length && depth > 0; end++) {
    if (text[end] === "'") end = text.indexOf("'", end + 1) < 0 ? text.length : text.indexOf("'", end + 1);
    else depth += text[end] === '(' ? 1 : text[end] === ')' ? -1 : 0;
  }
  return text.slice(start, end - 1).trim();
}

/** `column IN ('a', …)` or `column = ANY (ARRAY['a', …])` (as pg_dump writes it, casts and all): the column and its values. */
export function allowedValues(expression: string): { column: string; values: string[] } | undefined {
  let e = expression.trim();
  while (/^\(.*\)$/s.test(e) && checkOf(`CHECK ${e}`)?.length === e.length - 2) e = e.slice(1, -1).trim();
  const cast = String.raw`(?:\s*::\s*[\w ]+(?:\[\])?)?`;
  const m =
    new RegExp(String.raw`^\(?(${IDENT})${cast}\)?\s+IN\s*\(([\s\S]*)\)$`, 'i').exec(e) ??
    new RegExp(String.raw`^\(?(${IDENT})${cast}\)?\s*=\s*ANY\s*\(\s*\(?\s*ARRAY\s*\[([\s\S]*)\]\s*\)?${cast}\s*\)$`, 'i').exec(e);
  if (!m) return undefined;
  const values: string[] = [];
  for (const item of topLevel(m[2]!)) {
    const v = new RegExp(String.raw`^\s*('(?:[^']|'')*'|-?\d+(?:\.\d+)?)${cast}\s*$`).exec(item);
    if (!v) return undefined;
    values.push(v[1]!.startsWith("'") ? v[1]!.slice(1, -1).replace(/''/g, "'") : v[1]!);
  }
  return { column: unquote(m[1]!), values };
}

/** Whether CHECK `after` allows every value CHECK `before` allows: both of the `allowedValues` shape, over one column. */
export function widens(before: string, after: string): boolean {
  const b = allowedValues(before);
  const a = allowedValues(after);
  return b !== undefined && a !== undefined && a.column === b.column && b.values.every((v) => a.values.includes(v));
}

/** Words of a CHECK expression that are not columns (to name a constraint as PostgreSQL does). */
const NOT_COLUMNS =
  /^(and|or|not|in|is|null|true|false|any|all|array|between|like|ilike|similar|to|escape|distinct|from|case|when|then|else|end|coalesce|lower|upper|length|char_length|octet_length|cardinality|array_length|text|varchar|character|varying|integer|int|bigint|smallint|boolean|bytea|numeric|timestamptz|interval|date|jsonb|json)$/i;

/**
 * The CHECK constraints a schema holds after `migrations` (their SQL, in the order they run):
 * `table.name` → expression. An unnamed one gets PostgreSQL's name: `<table>_<column>_check` when
 * it reads one column, else `<table>_check`, numbered from 1 when taken.
 */
export function checksAfter(migrations: string[]): Map<string, string> {
  const checks = new Map<string, string>();
  const put = (table: string, name: string | undefined, expression: string): void => {
    let key = name;
    if (key === undefined) {
      const words = expression.replace(/'(?:[^']|'')*'/g, "''").match(new RegExp(IDENT, 'g')) ?? [];
      const columns = [...new Set(words.map(unquote).filter((w) => !NOT_COLUMNS.test(w)))];
      const base = columns.length === 1 ? `${table}_${columns[0]}_check` : `${table}_check`;
      key = base;
      for (let n = 1; checks.has(`${table}.${key}`); n++) key = `${base}${n}`;
    }
    checks.set(`${table}.${key}`, expression);
  };
  const named = new RegExp(String.raw`\bCONSTRAINT\s+(${IDENT})\s+CHECK\b`, 'i');
  for (const sql of migrations) {
    for (const s of statements(sql)) {
      const created = new RegExp(
        String.raw`^CREATE\s+(?:UNLOGGED\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?${QUALIFIED}\s*\(([\s\S]*)\)`,
        'i',
      ).exec(s.text);
      const altered = alterTable(s.text);
      const table = created ? unquote(created[1]!) : altered?.table;
      if (!table) {
        const gone = new RegExp(String.raw`^DROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?${QUALIFIED}`, 'i').exec(s.text);
        if (gone) for (const key of [...checks.keys()]) if (key.startsWith(`${unquote(gone[1]!)}.`)) checks.delete(key);
        continue;
      }
      for (const part of created ? actionsOf(created[2]!) : actionsOf(altered!.body)) {
        const drop = new RegExp(String.raw`^\s*DROP\s+CONSTRAINT\s+(?:IF\s+EXISTS\s+)?(${IDENT})`, 'i').exec(part);
        if (drop) checks.delete(`${table}.${unquote(drop[1]!)}`);
        const expression = checkOf(part);
        if (expression !== undefined) put(table, named.exec(part)?.[1] && unquote(named.exec(part)![1]!), expression);
      }
    }
  }
  return checks;
}

/** The actions of an ALTER TABLE body, or the elements of a CREATE TABLE's list: its top-level parts. */
const actionsOf = (body: string): string[] => topLevel(body).map((a) => a.trim());

/** `ALTER TABLE [IF EXISTS] [ONLY] t <body>`: the table and the rest. */
function alterTable(code: string): { table: string; body: string } | undefined {
  const m = new RegExp(String.raw`^ALTER\s+TABLE\s+(?:IF\s+EXISTS\s+)?(?:ONLY\s+)?${QUALIFIED}\s+([\s\S]*)$`, 'i').exec(code);
  return m ? { table: unquote(m[1]!), body: m[2]! } : undefined;
}

/** The column definitions of `ADD [COLUMN] …` actions, each up to the next top-level comma. */
function addedColumns(body: string): string[] {
  return topLevel(body)
    .map((a) => /^ADD\s+(?:COLUMN\s+)?(?:IF\s+NOT\s+EXISTS\s+)?(.*)$/is.exec(a.trim())?.[1])
    .filter((a): a is string => a !== undefined && !/^(CONSTRAINT|CHECK|UNIQUE|PRIMARY|FOREIGN|EXCLUDE)\b/i.test(a));
}

/**
 * A table constraint added (`ADD [CONSTRAINT name] …`): CHECK and EXCLUDE always count (their
 * expressions are not read here); UNIQUE, PRIMARY KEY and FOREIGN KEY unless over new columns only.
 */
function constrainsOld(body: string, added: Set<string> | undefined): boolean {
  return topLevel(body).some((a) => {
    const m = new RegExp(
      String.raw`^ADD\s+(?:CONSTRAINT\s+${IDENT}\s+)?(CHECK|EXCLUDE|UNIQUE|PRIMARY\s+KEY|FOREIGN\s+KEY)\b(.*)$`,
      'is',
    ).exec(a.trim());
    if (!m) return false;
    if (/^(CHECK|EXCLUDE)$/i.test(m[1]!)) return true;
    const columns = /^\s*(?:NULLS\s+(?:NOT\s+)?DISTINCT\s*)?\((.*)$/is.exec(m[2]!);
    return !columns || !onlyColumns(columns[1]!, added);
  });
}

/** Whether the parenthesised list that `rest` starts inside names only columns in `added`. */
function onlyColumns(rest: string, added: Set<string> | undefined): boolean {
  let depth = 1;
  let end = 0;
  for (; end < rest.length && depth > 0; end++) depth += rest[end] === '(' ? 1 : rest[end] === ')' ? -1 : 0;
  const names = [...rest.slice(0, end - 1).matchAll(new RegExp(IDENT, 'g'))].map((m) => unquote(m[0]));
  return names.length > 0 && names.every((n) => added?.has(n) || /^(lower|upper|coalesce|asc|desc|nulls|first|last|text)$/i.test(n));
}

/** Splits at top-level commas (not inside parentheses, brackets, '…' literals or "…" identifiers). */
function topLevel(body: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < body.length; i++) {
    if (body[i] === "'" || body[i] === '"') {
      const close = body.indexOf(body[i]!, i + 1);
      i = close < 0 ? body.length : close; // a doubled quote closes and opens again: the same split
    } else if (body[i] === '(' || body[i] === '[') depth++;
    else if (body[i] === ')' || body[i] === ']') depth--;
    else if (body[i] === ',' && depth === 0) {
      parts.push(body.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(body.slice(start));
  return parts;
}

/** A `CREATE TRIGGER … ON table` that fires before rows are written (and so can derive a column). */
function triggerOn(code: string, table: string): boolean {
  const m = new RegExp(String.raw`^CREATE\s+(?:OR\s+REPLACE\s+)?(?:CONSTRAINT\s+)?TRIGGER\b.*?\bBEFORE\b.*?\bON\s+${QUALIFIED}`, 'is').exec(
    code.replace(/\s+/g, ' '),
  );
  return m !== null && unquote(m[1]!) === table;
}

/** A `contract:` marker on `s` naming a release at or before the previous one; a bad marker is a finding of its own. */
function contractMarked(s: Statement, previous: PreviousRelease, file: string, findings: Finding[]): boolean {
  for (const comment of s.comments) {
    const m = CONTRACT_MARKER.exec(comment);
    if (!m) continue;
    if (previous.isAtOrBefore(m[2]!)) return true;
    findings.push({
      file,
      line: s.line,
      rule: 'marker',
      message: `"unused since ${m[2]}": not the previous release nor one before it, so the previous release may still use it`,
    });
    return true;
  }
  return false;
}

/**
 * Tables read through a named (prepared) statement whose result is `*` (`SELECT *`, `t.*`,
 * `RETURNING *`) in TypeScript sources (path → text): `{ name: …, text: … }` literals, the
 * only way this code prepares statements. A table given as `${this.table}` stands for every
 * `ResourceTableName`. Statement names by table.
 */
export function preparedStarTables(sources: Map<string, string>): Map<string, string[]> {
  const resourceTables = [...sources.values()]
    .map((text) => /type ResourceTableName\s*=\s*([^;]+);/.exec(text)?.[1])
    .filter((t): t is string => t !== undefined)
    .flatMap((t) => [...t.matchAll(/'(\w+)'/g)].map((m) => m[1]!));
  const found = new Map<string, string[]>();
  for (const text of sources.values()) {
    for (const m of text.matchAll(/\bname:\s*([^,\n]+),\s*text:\s*(`[^`]*`|'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")/g)) {
      const name = m[1]!.trim().replace(/^(['"`])(.*)\1$/, '$2');
      const sql = m[2]!.slice(1, -1);
      const tables = new Set<string>();
      for (const from of sql.matchAll(/\bSELECT\s+(?:\w+\.)?\*\s+FROM\s+(\$\{this\.table\}|\w+\b(?!\s*\())/gi)) tables.add(from[1]!);
      const written = /\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+(\$\{this\.table\}|\w+)/i.exec(sql)?.[1];
      if (written && /\bRETURNING\s+(?:[^;]*?,\s*)?(?:\w+\.)?\*\s*(?:,|$)/i.test(sql)) tables.add(written);
      for (const table of tables) {
        for (const t of table === '${this.table}' ? resourceTables : [table.toLowerCase()]) found.set(t, [...(found.get(t) ?? []), name]);
      }
    }
  }
  return found;
}
