// What the Clients, Access policies and Apps tabs share (./clients.ts, ./policies.ts, ./apps.ts):
// the resource API's searches, the words for a refusal, a JSON field read, and a decision
// explained (POST /authz/explain, GET /authz/decisions/<id>) as a table.
import {
  $,
  ApiError,
  api,
  cell,
  chosen,
  errorText,
  formErrors,
  say,
  showErrors,
  words,
  write,
  type Sentence,
  type Words,
} from './console.js';

/** A record of the resource API: its id, and `meta.managedBy` when a Kubernetes resource owns it. */
export interface Stored {
  id: string;
  description?: string;
  meta?: { managedBy?: string; versionId?: string; createdAt?: string; lastUpdated?: string };
}

/** Every record a search of the resource API finds (`path` with its own query, if any), a thousand a page. */
export async function search<T>(path: string): Promise<T[]> {
  const found: T[] = [];
  const join = path.includes('?') ? '&' : '?';
  for (let page = 1; ; page++) {
    const bundle = await api<{ entry: { resource: T }[] }>('GET', `${path}${join}_count=1000&_page=${page}`);
    found.push(...bundle.entry.map((e) => e.resource));
    if (bundle.entry.length < 1000) return found;
  }
}

/** A tab's form of one kind of record (the Clients, Access policies and Hooks tabs): where it writes, and how it shows what it wrote. */
export interface RecordForm<T extends Stored> {
  /** The kind, as the resource API names it: /<kind>/<id>. */
  kind: string;
  /** What the form's ids begin with (`client` for #client-id, #client-id-error…). */
  prefix: string;
  fields: string[];
  /** The records the list shows now, as last read. */
  records(): T[];
  select(record: T | null): void;
  load(): Promise<void>;
}

/**
 * The form of a record a Kubernetes resource owns (meta.managedBy), of a kind with a secret (a
 * Client, a Hook): its owner named, its fields read-only (the box refuses the API's writes of it
 * anyway), its secret the resource's Secret.
 */
export function showOwner(prefix: string, record: Stored | null): void {
  const owner = record?.meta?.managedBy;
  $(`${prefix}-managed`).hidden = !owner;
  write(
    $(`${prefix}-managed`),
    owner
      ? words`Managed by the Kubernetes resource ${chosen(owner)}: read-only here. Change it there (kubectl edit); its secret is the resource's Secret.`
      : '',
  );
  $<HTMLFieldSetElement>(`${prefix}-fields`).disabled = Boolean(owner);
}

/**
 * The form's records read again (`path`, a search of the resource API), the selected one kept if
 * it still is; or why they cannot be read, on the line `errorId`, `what` the admin may not do.
 */
export async function readRecords<T extends Stored>(
  path: string,
  errorId: string,
  what: Sentence,
  selected: T | null,
): Promise<{ records: T[]; selected: T | null }> {
  try {
    const records = await search<T>(path);
    $(errorId).textContent = '';
    return { records, selected: selected ? (records.find((r) => r.id === selected.id) ?? null) : null };
  } catch (err) {
    write($(errorId), problemText(err, what));
    return { records: [], selected };
  }
}

/** Writes `record`: over the one being edited (PUT), else a new one (POST); then the list is read again and the saved one selected. */
export async function writeRecord<T extends Stored>(form: RecordForm<T>, editing: T | null, record: object): Promise<T> {
  const saved = editing
    ? await api<T>('PUT', `/${form.kind}/${encodeURIComponent(editing.id)}`, record)
    : await api<T>('POST', `/${form.kind}`, record);
  await form.load();
  form.select(form.records().find((r) => r.id === saved.id) ?? saved);
  return saved;
}

/** Deletes `record` without confirmation: the form emptied and the list read again; or the box's refusal under the form (its own records, a Kubernetes resource's). */
export async function deleteRecord<T extends Stored>(form: RecordForm<T>, record: T | null): Promise<void> {
  if (!record) return;
  try {
    await api('DELETE', `/${form.kind}/${encodeURIComponent(record.id)}`);
    form.select(null);
    await form.load();
    say(words`Deleted ${chosen(record.id)}.`);
  } catch (err) {
    showErrors(form.prefix, formErrors(err), form.fields);
  }
}

export const isForbidden = (err: unknown): boolean => err instanceof ApiError && err.status === 403;

/** What a tab says of an error: a 403 in words (the admin's policies do not allow it), else the box's message. */
export const problemText = (err: unknown, what: Sentence): Sentence =>
  isForbidden(err) ? words`You may not ${what}: no AccessPolicy of yours allows it.` : errorText(err);

/** The record as written back: without `meta`, which the box owns. */
export function writable<T extends Stored>(record: T): Omit<T, 'meta'> {
  const { meta: _meta, ...rest } = record;
  return rest;
}

/** A JSON object typed in a field; `undefined` for an empty field; an error naming the field otherwise. */
export function jsonObject(text: string, name: string): Record<string, unknown> | undefined {
  if (!text.trim()) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new FieldError(name, `${name[0]!.toUpperCase()}${name.slice(1)} must be valid JSON.`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new FieldError(name, `${name} must be a JSON object.`);
  return value as Record<string, unknown>;
}

export class FieldError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/** A decision explained, as POST /authz/explain and GET /authz/decisions/<id> answer. */
export interface Explanation {
  id: string;
  app: string | null;
  allowed: boolean;
  status: number;
  reason: string;
  policies: { id: string; verdict: string; why?: string }[];
  /** The App's request object (api/policy/requests.ts AppRequest): `client` is the client's id. */
  request: {
    'request-method'?: string;
    path?: string;
    user?: { id?: string; email?: string } | null;
    client?: string | null;
  } | null;
  at?: string;
  cut?: string[];
}

/** Who asked, as the request object names them. */
export function callerText(request: Explanation['request']): Words {
  if (request?.user)
    return words`user ${chosen(request.user.email ?? request.user.id ?? '')}${request.client ? words` through ${chosen(request.client)}` : ''}`;
  if (request?.client) return words`client ${chosen(request.client)}`;
  return ['nobody identified'];
}

/** The verdict in a sentence, and each policy's verdict and reason as rows of `rows` (a tbody). */
export function showExplanation(verdict: HTMLElement, rows: HTMLElement, e: Explanation): void {
  const asked = e.request?.['request-method'] ? ` ${e.request['request-method'].toUpperCase()} ${e.request.path ?? ''}` : '';
  write(verdict, words`${e.allowed ? 'Allowed' : 'Denied'} (${e.status}):${asked} by ${callerText(e.request)}: ${e.reason}`);
  verdict.dataset.allowed = String(e.allowed);
  const found = e.policies.map((p) => {
    const row = document.createElement('tr');
    row.append(cell(chosen(p.id)), cell(p.verdict), cell(p.why ?? ''));
    return row;
  });
  if (!found.length) {
    const row = document.createElement('tr');
    row.append(Object.assign(cell('No policy of the App applied: denied by default.'), { colSpan: 3, className: 'empty' }));
    found.push(row);
  }
  rows.replaceChildren(...found);
}
