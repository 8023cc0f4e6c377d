// The expand/contract rule read off the text of a migration (test/unit/db/migrations.test.ts):
// while a rolling update runs, the previous release serves the schema this release's migrations
// made, so a migration may only add what the previous release does not notice (expand); what
// it still uses goes a release later (contract), once no release that uses it can be running.
// Pure: SQL text in, findings out. What a text check cannot see is listed in the test's header.

/** One statement of a migration: its code (comments out, string literals emptied) and the comments before it. */
export interface Statement {
  code: string;
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
    } else if (c === "'" || (/[eE]/.test(c) && sql[i + 1] === "'" && !/\w/.test(sql[i - 1] ?? ''))) {
      const escapes = c !== "'";
      for (end = sql.indexOf("'", i) + 1; end < sql.length; end++) {
        if (escapes && sql[end] === '\\') end++;
        else if (sql[end] === "'" && sql[end + 1] === "'") end++;
        else if (sql[end] === "'") break;
      }
      end++;
      code += "''";
    } else if (c === '"') {
      for (end = i + 1; end < sql.length && !(sql[end] === '"' && sql[end + 1] !== '"'); end += sql[end] === '"' ? 2 : 1);
      end++;
      code += sql.slice(i, end);
    } else if (/^\$([A-Za-z_]\w*)?\$/.test(rest) && !/[\w$]/.test(sql[i - 1] ?? '')) {
      const tag = /^\$([A-Za-z_]\w*)?\$/.exec(rest)![0];
      const close = sql.indexOf(tag, i + tag.length);
      end = close < 0 ? sql.length : close + tag.length;
      code += sql.slice(i, end);
    } else if (c === ';') {
      if (code.trim()) out.push({ code: code.trim(), comments, line: startLine });
      code = '';
      comments = [];
    } else {
      if (!code.trim() && !/\s/.test(c)) startLine = line;
      code += c;
    }
    lineOf(i, end);
    i = end;
  }
  if (code.trim()) out.push({ code: code.trim(), comments, line: startLine });
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

/** Every finding of the rule over one migration (`file`: its name, for messages). */
export function checkMigration(file: string, sql: string, previous: PreviousRelease): Finding[] {
  const all = statements(sql);
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
    const refuse = (rule: string, message: string, kind: 'contract' | 'backfill' | 'none' = 'contract'): void => {
      if (kind === 'contract' && contractMarked(s, previous, file, findings)) return;
      if (kind === 'backfill' && s.comments.some((c) => BACKFILL_MARKER.test(c))) return;
      findings.push({ file, line: s.line, rule, message });
    };
    const code = s.code.replace(/\s+/g, ' ');
    const altered = alterTable(code);
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
        "replaces what the previous release runs or reads (a trigger function's NOTIFY payload is what its change feed parses)",
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

/** Splits at top-level commas (not inside parentheses). */
function topLevel(body: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < body.length; i++) {
    if (body[i] === '(') depth++;
    else if (body[i] === ')') depth--;
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
