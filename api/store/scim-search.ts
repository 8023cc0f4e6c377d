// SCIM filters (RFC 7644 §3.4.2.2) in SQL: the parsed filter (api/people/scim/filter.ts) names
// attributes already checked against the schemas, and this file alone says where each lives — a
// column, the person's kept attributes (users.scim), or a multi-valued attribute's elements.
// Values are always bound parameters; attribute names reach SQL only through the tables below or
// as bound jsonb paths. A search runs under a statement time limit: a filter that would take
// longer is refused (SearchTooCostly), never left to hold a connection.
import { withTransaction, type Pool, type Transaction } from '../db/pool.js';
import { neverProvenSql } from './users.js';

export type CompareOp = 'eq' | 'ne' | 'co' | 'sw' | 'ew' | 'gt' | 'ge' | 'lt' | 'le';
export type AttrType = 'string' | 'boolean' | 'dateTime' | 'reference' | 'complex' | 'integer' | 'decimal' | 'binary';

/** An attribute a filter names, canonical (the schema's spelling). */
export interface AttrRef {
  /** Where it lives: in the resource, or (inside a `has`, or with `multi`) in an element of a multi-valued attribute. */
  path: string[];
  /** The multi-valued attribute the value is in (`emails` of `emails.value`): any of its elements may match. */
  multi?: string[];
  type: AttrType;
  caseExact: boolean;
}

export type ScimFilter =
  | { op: 'and' | 'or'; left: ScimFilter; right: ScimFilter }
  | { op: 'not'; filter: ScimFilter }
  | { op: 'pr'; attr: AttrRef }
  | { op: CompareOp; attr: AttrRef; value: string | boolean }
  /** `emails[type eq "work"]`: some element of `multi` matches `filter` (whose paths are the element's). */
  | { op: 'has'; multi: string[]; filter: ScimFilter };

/** A search that ran out of its time: the filter asks more than the box computes for one request. */
export class SearchTooCostly extends Error {}

/** How long one search may run. */
const SEARCH_TIME_LIMIT_MS = 3000;

interface Place {
  table: string;
  alias: string;
  /** Attributes held in columns: their SQL, and whether it is a timestamp. */
  columns: Record<string, { sql: string; kind?: 'time' | 'boolean' }>;
  /** Multi-valued attributes: a jsonb array of their elements, as the resource shows them. */
  arrays: Record<string, string>;
  /** The jsonb of attributes without a column (users.scim); none for groups. */
  kept?: string;
  /** Which rows a directory sees at all (none of the others matches any filter, nor is counted). */
  seen?: string;
}

/** The box's public subs (api/credentials/subjects.ts PublicSubjects): row ids, or opaque ids. */
type PublicSubjects = 'sequential' | 'opaque';

/**
 * A person's SCIM id, in SQL: their public sub (api/credentials/subjects.ts subjectFor, as
 * api/people/scim/resources.ts shows it) — their row id where the box's public subs are
 * sequential, else their opaque id. Filters compare with it, so that on an opaque box a row id,
 * or any client's pairwise sub, matches nobody.
 */
const PUBLIC_SUB: Record<PublicSubjects, (alias: string) => string> = {
  sequential: (alias) => `${alias}.id::text`,
  opaque: (alias) => `${alias}.subject::text`,
};

const usersPlace = (subjects: PublicSubjects): Place => ({
  table: 'users',
  alias: 'u',
  columns: {
    id: { sql: PUBLIC_SUB[subjects]('u') },
    userName: { sql: 'u.email' },
    externalId: { sql: 'u.external_id' },
    active: { sql: 'u.active', kind: 'boolean' },
    'meta.created': { sql: 'u.created_at', kind: 'time' },
    'meta.lastModified': { sql: 'u.updated_at', kind: 'time' },
  },
  arrays: {
    groups: `COALESCE((SELECT jsonb_agg(jsonb_build_object('value', ug.group_id::text, 'display', g.name))
      FROM user_groups ug JOIN groups g ON g.id = ug.group_id WHERE ug.user_id = u.id), '[]'::jsonb)`,
  },
  kept: 'u.scim',
  // A person whose address was never proven is nobody to a directory: not its to adopt (users.ts addressNeverProven).
  seen: `NOT ${neverProvenSql('u')}`,
});

const groupsPlace = (subjects: PublicSubjects): Place => ({
  table: 'groups',
  alias: 'g',
  columns: {
    id: { sql: 'g.id::text' },
    displayName: { sql: 'g.name' },
    externalId: { sql: 'g.external_id' },
    'meta.created': { sql: 'g.created_at', kind: 'time' },
    'meta.lastModified': { sql: 'g.updated_at', kind: 'time' },
  },
  arrays: {
    members: `COALESCE((SELECT jsonb_agg(jsonb_build_object('value', ${PUBLIC_SUB[subjects]('u')}, 'type', 'User'))
      FROM user_groups ug JOIN users u ON u.id = ug.user_id WHERE ug.group_id = g.id AND NOT ${neverProvenSql('u')}), '[]'::jsonb)`,
  },
});

/** Turns a filter into SQL text, binding every value (and every jsonb path) into `params`. */
class Compiler {
  private elements = 0;
  constructor(
    private readonly place: Place,
    readonly params: unknown[],
  ) {}

  private bind(value: unknown): string {
    this.params.push(value);
    return `$${this.params.length}`;
  }

  compile(f: ScimFilter, element?: string): string {
    switch (f.op) {
      case 'and':
      case 'or':
        return `(${this.compile(f.left, element)} ${f.op.toUpperCase()} ${this.compile(f.right, element)})`;
      case 'not':
        return `(NOT COALESCE(${this.compile(f.filter, element)}, false))`;
      case 'has':
        return this.some(f.multi, (e) => this.compile(f.filter, e));
      default:
        if (f.attr.multi && element === undefined) return this.some(f.attr.multi, (e) => this.test(f, e));
        return this.test(f, element);
    }
  }

  /** Some element of the multi-valued attribute `multi` satisfies `inner`. */
  private some(multi: string[], inner: (element: string) => string): string {
    const array =
      this.place.arrays[multi.join('.')] ?? (this.place.kept ? `(${this.place.kept} #> ${this.bind(multi)}::text[])` : "'[]'::jsonb");
    const e = `e${++this.elements}`;
    return `EXISTS (SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof(${array}) = 'array' THEN ${array} ELSE '[]'::jsonb END) ${e} WHERE ${inner(e)})`;
  }

  /** One comparison (or `pr`) of an attribute of the resource, or of the element `element`. */
  private test(f: Extract<ScimFilter, { attr: AttrRef }>, element: string | undefined): string {
    const { attr } = f;
    const column = element === undefined ? this.place.columns[attr.path.join('.')] : undefined;
    if (column) return this.onColumn(f, column);
    const array = element === undefined ? this.place.arrays[attr.path.join('.')] : undefined;
    if (array) return f.op === 'pr' ? `jsonb_array_length(${array}) > 0` : 'false';
    const source = element ?? this.place.kept;
    if (!source) return 'false';
    const path = `${this.bind(attr.path)}::text[]`;
    const json = `(${source} #> ${path})`;
    if (f.op === 'pr') return `(${json} IS NOT NULL AND ${json} NOT IN ('null'::jsonb, '""'::jsonb, '[]'::jsonb, '{}'::jsonb))`;
    if (attr.type === 'boolean') return `(${json} ${f.op === 'ne' ? '<>' : '='} to_jsonb(${this.bind(f.value)}::boolean))`;
    return this.onText(f.op, `(${source} #>> ${path})`, String(f.value), attr.caseExact);
  }

  private onColumn(f: Extract<ScimFilter, { attr: AttrRef }>, column: Place['columns'][string]): string {
    if (f.op === 'pr') return `(${column.sql} IS NOT NULL)`;
    if (column.kind === 'boolean') return `(${column.sql} ${f.op === 'ne' ? '<>' : '='} ${this.bind(f.value)}::boolean)`;
    if (column.kind === 'time') return `(${column.sql} ${ORDER[f.op] ?? '='} ${this.bind(f.value)}::timestamptz)`;
    return this.onText(f.op, column.sql, String(f.value), f.attr.caseExact);
  }

  /** Text compared as RFC 7644 §3.4.2.2 says: `co`, `sw` and `ew` as plain strings, never patterns. */
  private onText(op: CompareOp, sql: string, value: string, caseExact: boolean): string {
    const x = caseExact ? sql : `lower(${sql})`;
    const bound = `${this.bind(value)}::text`;
    const v = caseExact ? bound : `lower(${bound})`;
    switch (op) {
      case 'co':
        return `(strpos(${x}, ${v}) > 0)`;
      case 'sw':
        return `starts_with(${x}, ${v})`;
      case 'ew':
        return `(right(${x}, char_length(${v})) = ${v})`;
      default:
        return `(${x} ${ORDER[op]} ${v})`;
    }
  }
}

const ORDER: Partial<Record<CompareOp, string>> = { eq: '=', ne: '<>', gt: '>', ge: '>=', lt: '<', le: '<=' };

export interface ScimPage {
  /** RFC 7644 §3.4.2.4: 1-based. */
  startIndex: number;
  count: number;
}

/**
 * The row ids of one page of what `filter` matches among the box's people or groups (row id
 * order), and how many match in all; `subjects`: the box's public subs, which people's ids are.
 */
export async function searchScim(
  pool: Pool,
  kind: 'User' | 'Group',
  filter: ScimFilter | undefined,
  page: ScimPage,
  subjects: PublicSubjects,
): Promise<{ total: number; ids: number[] }> {
  const place = kind === 'User' ? usersPlace(subjects) : groupsPlace(subjects);
  const params: unknown[] = [];
  const conditions = [...(place.seen ? [place.seen] : []), ...(filter ? [`(${new Compiler(place, params).compile(filter)})`] : [])];
  const where = conditions.length ? `WHERE ${conditions.join(' AND ')}` : '';
  const from = `FROM ${place.table} ${place.alias} ${where}`;
  return withTransaction(pool, async (tx: Transaction) => {
    await tx.query(`SET LOCAL statement_timeout = ${SEARCH_TIME_LIMIT_MS}`);
    try {
      const total = (await tx.query<{ n: number }>(`SELECT count(*)::int AS n ${from}`, params)).rows[0]!.n;
      const paged = [...params, page.startIndex - 1, page.count];
      const { rows } = await tx.query<{ id: string }>(
        `SELECT ${place.alias}.id ${from} ORDER BY ${place.alias}.id OFFSET $${paged.length - 1} LIMIT $${paged.length}`,
        paged,
      );
      return { total, ids: rows.map((r) => Number(r.id)) };
    } catch (err) {
      // 57014: query_canceled, which statement_timeout raises.
      if ((err as { code?: string }).code === '57014') throw new SearchTooCostly('the filter takes longer than a search may');
      throw err;
    }
  });
}
