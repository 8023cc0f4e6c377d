// The Events tab (docs/operations/audit.md#the-events-tab): the audit trail, GET /AuditEvent, newest
// first, narrowed by its filters as they change; "Older events" follows the trail's cursor. Each
// record an event names is a button that shows the record as the API reads it — a person, a
// client, a policy, a refused decision's explanation — with the admin's own token: what their
// policies do not let them read, they are told, and the box shows them no event about it anyway.
import type { AuditEventResource as AuditEvent } from '../../audit.js';
import { $, ApiError, api, cell, chosen, errorText, field, readText, words, write, type Tab, type Words } from './console.js';

interface Page {
  entry: { resource: AuditEvent }[];
  link: { relation: string; url: string }[];
}

const EVENT_NAMES: Record<string, string> = {
  record_changed: 'Record',
  account: 'Account',
  sign_in: 'Sign-in',
  session_closed: 'Sessions ended',
  factor: 'Second factor',
  upstream: 'Identity provider',
  decision: 'Decision refused',
  api_refused: 'Request refused',
  left_out: 'Left out',
};

/**
 * Where the API reads a record of `kind` an event names, or undefined: a refused decision's
 * explanation, or the records whose changes the trail reports, at the path the page's Record filter
 * gives their kind (api/ui/admin-events.ts, from api/record-kinds.ts).
 */
function readAt(kind: string, id: string, e: AuditEvent): string | undefined {
  // With its App: a policy may grant one App's refusals by `params.app` (docs/guides/admin-console.md).
  if (kind === 'Decision')
    return `/authz/decisions/${encodeURIComponent(id)}${typeof e.detail.app === 'string' ? `?app=${encodeURIComponent(e.detail.app)}` : ''}`;
  const at = Array.from($<HTMLSelectElement>('events-type').options).find((o) => o.value === kind)?.dataset.readAt;
  return at === undefined ? undefined : `${at}${encodeURIComponent(id)}`;
}

const FILTERS: [string, string][] = [
  ['events-event', 'event'],
  ['events-outcome', 'outcome'],
  ['events-actor', 'actor'],
  ['events-user', 'user'],
  ['events-client', 'client'],
  ['events-type', 'resource_type'],
  ['events-id', 'resource_id'],
];

let next: string | undefined;
/** The filters the rows shown answer: an answer to older ones is dropped. */
let asked = '';

function query(): string {
  const q = new URLSearchParams({ _count: '50' });
  for (const [id, param] of FILTERS) {
    const value = field(id).value.trim();
    if (value) q.set(param, value);
  }
  for (const [id, param] of [
    ['events-since', 'since'],
    ['events-until', 'until'],
  ] as const) {
    const value = field(id).value;
    if (value) q.set(param, new Date(value).toISOString());
  }
  return q.toString();
}

/** What happened, in a few words: the action, and what changed or why. */
function what(e: AuditEvent): string {
  const changes = e.detail.changes as Record<string, unknown> | undefined;
  // A creation or a deletion changes every field: the fields are worth naming only for a change.
  const fields = e.action === 'changed' && changes && Object.keys(changes).length ? `: ${Object.keys(changes).sort().join(', ')}` : '';
  const reason = typeof e.detail.reason === 'string' ? ` (${e.detail.reason})` : '';
  const kind = e.event === 'record_changed' && e.resource ? `${e.resource.type} ` : '';
  return `${kind}${e.action ?? ''}${fields}${reason}`;
}

const named = (p: { user: string | null; client: string | null }): Words =>
  words`${p.user ? words`user ${chosen(p.user)}` : ''}${p.user && p.client ? ' via ' : ''}${p.client ? words`client ${chosen(p.client)}` : ''}`;

/** Who called, and whom a refused decision was about when that is someone else (an AuthZEN PEP's subject). */
const who = (e: AuditEvent): Words => {
  const byName = named(e.actor);
  const actor = readText(byName) ? byName : typeof e.detail.address === 'string' ? [`from ${e.detail.address}`] : [];
  const subject = e.subject ? named(e.subject) : [];
  return readText(subject) && readText(subject) !== readText(byName) ? words`${actor}, about ${subject}` : actor;
};

/** The records an event names, each a button that shows it. */
function records(e: AuditEvent): HTMLTableCellElement {
  const named: [string, string][] = [];
  if (e.resource && readAt(e.resource.type, e.resource.id, e) !== undefined) named.push([e.resource.type, e.resource.id]);
  if (e.user && !(e.resource?.type === 'User' && e.resource.id === e.user)) named.push(['User', e.user]);
  if (e.client && !(e.resource?.type === 'Client' && e.resource.id === e.client)) named.push(['Client', e.client]);
  const td = document.createElement('td');
  for (const [kind, id] of named) {
    const b = Object.assign(document.createElement('button'), { type: 'button', className: 'link' });
    write(b, words`${kind} ${chosen(id)}`);
    b.addEventListener('click', () => void showRecord(kind, id, e));
    td.append(b, ' ');
  }
  return td;
}

async function showRecord(kind: string, id: string, e: AuditEvent): Promise<void> {
  $('event-record').hidden = false;
  write($('event-record-title'), words`${kind} ${chosen(id)}`);
  try {
    const record = await api<Record<string, unknown>>('GET', readAt(kind, id, e)!);
    // A person's password hash is no one's business here.
    const { password: _hash, ...shown } = record;
    $('event-record-body').textContent = JSON.stringify(shown, null, 2);
  } catch (err) {
    $('event-record-body').textContent =
      err instanceof ApiError && err.status === 404
        ? 'It is gone: the event is all that is left of it.'
        : err instanceof ApiError && err.status === 403
          ? 'Your account may not read this record.'
          : errorText(err);
  }
}

function row(e: AuditEvent): HTMLTableRowElement {
  const tr = document.createElement('tr');
  tr.dataset.outcome = e.outcome;
  tr.append(
    cell(new Date(e.at).toLocaleString()),
    cell(EVENT_NAMES[e.event] ?? e.event),
    cell(what(e)),
    cell(e.outcome === 'failure' ? 'Failure' : 'Success'),
    cell(who(e)),
    records(e),
  );
  return tr;
}

async function load(more = false): Promise<void> {
  const q = more && next ? next : `/AuditEvent?${query()}`;
  const filters = query();
  if (!more) asked = filters;
  let page: Page;
  try {
    page = await api<Page>('GET', q);
  } catch (err) {
    $('events-error').textContent =
      err instanceof ApiError && err.status === 403 ? 'Your account may not see the audit trail.' : errorText(err);
    return;
  }
  if (asked !== filters) return;
  $('events-error').textContent = '';
  next = page.link.find((l) => l.relation === 'next')?.url;
  const rows = page.entry.map((e) => row(e.resource));
  if (more) $('events-rows').append(...rows);
  else $('events-rows').replaceChildren(...rows);
  if (!$('events-rows').children.length) {
    const empty = document.createElement('tr');
    empty.append(
      Object.assign(cell(next ? 'None on this page: look further back.' : 'No events match.'), { colSpan: 6, className: 'empty' }),
    );
    $('events-rows').append(empty);
  }
  $('events-more').hidden = !next;
}

let timer: ReturnType<typeof setTimeout> | undefined;
function narrow(): void {
  clearTimeout(timer);
  timer = setTimeout(() => void load(), 200);
}

export const eventsTab: Tab = {
  name: 'events',
  start() {
    $('events-filters').addEventListener('input', narrow);
    $('events-filters').addEventListener('submit', (e) => {
      e.preventDefault();
      void load();
    });
    $('events-more').addEventListener('click', () => void load(true));
  },
  show: () => load(),
};
