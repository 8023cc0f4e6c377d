// The search parameters every resource type shares (`_count`, `_page`, `_sort`,
// `<field>=<value>` on top-level fields) and their translation to SQL. Field names
// never reach SQL text: they are bound as parameters or looked up in a whitelist.
import { badRequest } from '../errors.js';

export interface SearchQuery {
  count: number;
  page: number;
  filters: { field: string; value: string }[];
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
    for (const value of Array.isArray(raw) ? raw : [raw]) {
      if (typeof value !== 'string') throw badRequest(`search parameter "${field}" must be a plain value`);
      filters.push({ field, value });
    }
  }
  const sort: SearchQuery['sort'] = [];
  if (query._sort !== undefined) {
    if (typeof query._sort !== 'string') throw badRequest('_sort must be a comma-separated list of fields');
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

/** WHERE clause for a table holding the resource as jsonb in `resource`. */
export function jsonbWhere(q: SearchQuery, params: unknown[]): string {
  const where = q.filters.map(({ field, value }) => {
    params.push(field, value);
    const f = `$${params.length - 1}`;
    const v = `$${params.length}`;
    if (field === 'id') return `id = ${v}`;
    // A scalar field equals the value; an array field contains it.
    return `(resource->>${f} = ${v} OR (jsonb_typeof(resource->${f}) = 'array' AND resource->${f} ? ${v}))`;
  });
  return where.length ? `WHERE ${where.join(' AND ')}` : '';
}

/** ORDER BY / LIMIT / OFFSET; `column` maps a sort field to an SQL expression. */
export function orderAndPage(q: SearchQuery, params: unknown[], column: (field: string) => string): string {
  const order = q.sort.map(({ field, desc }) => `${column(field)} ${desc ? 'DESC' : 'ASC'} NULLS LAST`);
  order.push('id');
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
