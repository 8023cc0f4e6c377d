// The Settings tab of the admin console: the box's effective configuration as GET /settings answers
// it (never a secret), read-only, one table per topic.
import { $, ApiError, api, cell, errorText, type Tab } from './console.js';
import { forbidden } from './keys.js';

type Value = string | number | boolean | null | Value[] | { [name: string]: Value };

/** What each topic of GET /settings is called on the page; a topic the box adds later shows under its own name. */
const TOPICS: Record<string, string> = {
  https: 'HTTPS',
  signing: 'Signing keys',
  tokens: 'Tokens',
  sessions: 'Sessions',
  sign_in: 'Sign-in',
  second_factors: 'Second factors',
  registration: 'Registration',
  mail: 'Mail',
  trust: 'What the box trusts',
  gate: 'The gate (decision point)',
  upkeep: 'Upkeep',
  database: 'Database',
  processes: 'Processes',
};

/** What a setting without a value means, where "—" would not say it. */
const NONE_MEANS: Record<string, string> = {
  access_token_default_seconds: "as each client sets it (its access_token_expiration); unset: they don't expire",
  strict_transport_security: 'not sent: the base URL is http',
  grpc_port: 'not served',
};

/** A setting's name as a person reads it: access_token_default_seconds → "access token default seconds". */
const label = (name: string): string => name.replace(/_/g, ' ');

function valueText(value: Value): string {
  if (value === null) return '—';
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  if (Array.isArray(value)) return value.length ? value.map(valueText).join(', ') : 'none';
  if (typeof value === 'object')
    return Object.entries(value)
      .map(([k, v]) => `${label(k)}: ${valueText(v)}`)
      .join('; ');
  return String(value);
}

function topicTable(title: string, entries: [string, Value][]): HTMLTableElement {
  const table = Object.assign(document.createElement('table'), { className: 'sessions settings' });
  table.style.tableLayout = 'fixed';
  table.append(Object.assign(document.createElement('caption'), { textContent: title }));
  const body = document.createElement('tbody');
  for (const [name, value] of entries) {
    const row = document.createElement('tr');
    const th = Object.assign(document.createElement('th'), { scope: 'row', textContent: label(name) });
    th.style.width = '40%'; // every topic's values in one column
    row.append(th, cell(value === null ? (NONE_MEANS[name] ?? '—') : valueText(value)));
    body.append(row);
  }
  table.append(body);
  return table;
}

async function loadSettings(): Promise<void> {
  let settings: Record<string, Value>;
  try {
    settings = await api<Record<string, Value>>('GET', '/settings');
  } catch (err) {
    $('settings-body').replaceChildren();
    $('settings-error').textContent =
      err instanceof ApiError && err.status === 403 ? forbidden("the box's settings", 'GET /settings') : errorText(err);
    return;
  }
  $('settings-error').textContent = '';
  const box: [string, Value][] = [];
  const topics: HTMLTableElement[] = [];
  for (const [name, value] of Object.entries(settings)) {
    if (value !== null && typeof value === 'object' && !Array.isArray(value))
      topics.push(topicTable(TOPICS[name] ?? label(name), Object.entries(value)));
    else box.push([name, value]);
  }
  $('settings-body').replaceChildren(topicTable('The box', box), ...topics);
}

export const settingsTab: Tab = { name: 'settings', show: loadSettings };
