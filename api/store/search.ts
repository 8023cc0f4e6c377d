// The search parameters every resource type shares (`_count`, `_page`, `_sort`,
// `<field>=<value>`) and their translation to SQL. Values and field names never
// reach SQL text: they are bound as parameters or looked up in a whitelist.
// A parameter given several times matches any of its values; different
// parameters must all match.
import { badRequest } from '../errors.js';

export interface SearchQuery {
  count: number;
  page: number;
  /** One entry per parameter, with every value it was given. */
  filters: { field: string; values: string[] }[];
  sort: { field: string; desc: boolean }[];
}

export const MAX_COUNT = 1000;
const FIELD = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/;
/** Query parameters that are never filters. */
const RESERVED = new Set(['_count', '_page', '_sort', 'access_token']);

function positiveInt(name: string, raw: unknown, fallback: number, max: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (typeof raw !== 'string' || !Number.isInteger(n) || n < 1 || n > max) {
    throw badRequest(`${name} must be an integer from 1 to ${max}`);
  }
  return n;
}

export function parseSearch(query: Record<string, unknown>): SearchQuery {
  const filters: SearchQuery['filters'] = [];
  for (const [field, raw] of Object.entries(query)) {
    if (RESERVED.has(field)) continue;
    if (!FIELD.test(field)) throw badRequest(`unknown search parameter "${field}"`);
    const values = Array.isArray(raw) ? (raw as unknown[]) : [raw];
    if (!values.every((v) => typeof v === 'string')) throw badRequest(`search parameter "${field}" must be a plain value`);
    filters.push({ field, values: values });
  }
  const sort: SearchQuery['sort'] = [];
  if (query._sort !== undefined) {
    if (typeof query._sort !== 'string') throw badRequest('_sort must be one comma-separated list of fields');
    for (const part of query._sort.split(',').filter(Boolean)) {
      const desc = part.startsWith('-');
      const field = desc ? part.slice(1) : part;
      if (!FIELD.test(field)) throw badRequest(`cannot sort by "${part}"`);
      sort.push({ field, desc });
    }
  }
  return {
    count: positiveInt('_count', query._count, 100, MAX_COUNT),
    page: positiveInt('_page', query._page, 1, 1_000_000),
    filters,
    sort,
  };
}

/** `WHERE` from one condition per filter: any of a parameter's values, and every parameter. */
function whereOf(q: SearchQuery, condition: (field: string, value: string) => string): string {
  const where = q.filters.map(({ field, values }) => `(${values.map((value) => condition(field, value)).join(' OR ')})`);
  return where.length ? `WHERE ${where.join(' AND ')}` : '';
}

/** WHERE clause for a table holding the resource as jsonb in `resource`, its id in `id`. */
export function jsonbWhere(q: SearchQuery, params: unknown[]): string {
  return whereOf(q, (field, value) => {
    const v = `$${params.push(value)}`;
    if (field === 'id') return `id = ${v}`;
    const f = `$${params.push(field)}`;
    // A scalar field equals the value (a boolean or number as its JSON text); an array field contains it.
    return `(resource->>${f} = ${v} OR (jsonb_typeof(resource->${f}) = 'array' AND resource->${f} ? ${v}))`;
  });
}

/** A search parameter of a table with fixed columns. */
export interface ColumnFilter {
  /** The condition a row meets for one value bound at placeholder `p`. */
  sql: (p: string) => string;
  /**
   * The value as the column holds it, or undefined when no row can hold it (it
   * then matches nothing): a value that is not a uuid never reaches a uuid column.
   */
  value?: (raw: string) => unknown;
}

/** What a resource of fixed columns can be searched and sorted by; `kind` names it in messages. */
export interface ColumnSearch {
  kind: string;
  filters: Record<string, ColumnFilter>;
  /** Sort field → SQL expression. */
  sorts: Record<string, string>;
  /** The last sort key, which makes the order total (the primary key). */
  id: string;
}

const known = (names: Record<string, unknown>): string => Object.keys(names).join(', ');

/** WHERE clause over fixed columns; a parameter the resource does not have is 400, not ignored. */
export function columnWhere(search: ColumnSearch, q: SearchQuery, params: unknown[]): string {
  return whereOf(q, (field, raw) => {
    const filter = Object.hasOwn(search.filters, field) ? search.filters[field] : undefined;
    if (!filter) throw badRequest(`unknown ${search.kind} search parameter "${field}" (known: ${known(search.filters)})`);
    const value = filter.value ? filter.value(raw) : raw;
    return value === undefined ? 'false' : filter.sql(`$${params.push(value)}`);
  });
}

/** ORDER BY / LIMIT / OFFSET over fixed columns. */
export function columnOrderAndPage(search: ColumnSearch, q: SearchQuery, params: unknown[]): string {
  const column = (field: string): string => {
    const sql = Object.hasOwn(search.sorts, field) ? search.sorts[field] : undefined;
    if (!sql) throw badRequest(`cannot sort ${search.kind}s by "${field}" (known: ${known(search.sorts)})`);
    return sql;
  };
  return orderAndPage(q, params, column, search.id);
}

/** ORDER BY / LIMIT / OFFSET; `column` maps a sort field to an SQL expression, `id` breaks ties. */
export function orderAndPage(q: SearchQuery, params: unknown[], column: (field: string) => string, id = 'id'): string {
  const order = q.sort.map(({ field, desc }) => `${column(field)} ${desc ? 'DESC' : 'ASC'} NULLS LAST`);
  order.push(id);
  params.push(q.count, (q.page - 1) * q.count);
  return `ORDER BY ${order.join(', ')} LIMIT $${params.length - 1} OFFSET $${params.length}`;
}

/** Sort column of a jsonb resource table: `id` or a top-level field of the resource. */
export function jsonbColumn(params: unknown[]): (field: string) => string {
  return (field) => {
    if (field === 'id') return 'id';
    params.push(field);
    return `resource->>$${params.length}`;
  };
}

/** A value for a bigint id column, or undefined when it is not one. */
export const bigintId = (raw: string): string | undefined => (/^[1-9]\d{0,17}$/.test(raw) ? raw : undefined);
