// The Clients tab (docs/guides/admin-console.md): the box's clients, the filter that narrows as
// you type, Save, Delete without confirmation, and a secret rotated in the browser and shown
// once. A record a Kubernetes resource owns (meta.managedBy) is read-only here: its owner
// writes it, and the box refuses the API's writes of it anyway. A SAML app shows its SAML side
// below the form (./saml-app.ts).
import { $, api, button, chosen, field, formErrors, renderList, say, showErrors, words, write, type Tab } from './console.js';
import {
  deleteRecord,
  FieldError,
  jsonObject,
  readRecords,
  showOwner,
  writable,
  writeRecord,
  type RecordForm,
  type Stored,
} from './records.js';
import { showSamlApp } from './saml-app.js';

interface Client extends Stored {
  grant_types: string[];
  [key: string]: unknown;
}

const FIELDS = ['id', 'description', 'grant_types', 'settings', 'secret'];
/** The fields the form shows of its own; the rest of the record is Settings' JSON. */
const OWN_FIELDS = new Set(['id', 'description', 'grant_types', 'resourceType', 'meta']);

const state: { clients: Client[]; selected: Client | null } = { clients: [], selected: null };

const form: RecordForm<Client> = { kind: 'Client', prefix: 'client', fields: FIELDS, records: () => state.clients, select, load };

const grantBoxes = (): HTMLInputElement[] => Array.from(document.querySelectorAll<HTMLInputElement>('#client-grant_types input'));

/**
 * A new secret: 32 random bytes from the browser's CSPRNG, base64url. It goes to the box once
 * (PUT /Client/<id>, hashed there) and is shown once; nothing keeps it.
 */
function newSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
}

function render(): void {
  renderList(
    'clients-list',
    state.clients,
    (c) => chosen(c.id),
    state.selected,
    field('clients-filter').value,
    select,
    (c) => (c.meta?.managedBy ? 'Kubernetes' : undefined),
  );
}

function hideSecret(): void {
  $('client-secret').hidden = true;
  $('client-secret-value').textContent = '';
}

function select(client: Client | null): void {
  state.selected = client;
  hideSecret();
  write($('client-form-title'), client ? words`Edit ${chosen(client.id)}` : 'New client');
  field('client-id').value = client?.id ?? '';
  field('client-id').readOnly = client !== null; // the id is the record's name: a new name is a new client
  field('client-description').value = client?.description ?? '';
  const grants = client?.grant_types ?? ['client_credentials'];
  for (const box of grantBoxes()) box.checked = grants.includes(box.value);
  const rest = client ? Object.fromEntries(Object.entries(client).filter(([k]) => !OWN_FIELDS.has(k))) : {};
  field('client-settings').value = Object.keys(rest).length ? JSON.stringify(rest, null, 2) : '';
  showOwner('client', client);
  button('client-delete').disabled = !client;
  button('client-rotate').disabled = !client;
  showErrors('client', {}, FIELDS);
  render();
  void showSamlApp(client);
}

async function load(): Promise<void> {
  ({ records: state.clients, selected: state.selected } = await readRecords<Client>(
    '/Client?_sort=id',
    'clients-error',
    "see this box's clients",
    state.selected,
  ));
  render();
}

/** The record the form describes (the stored one's other fields kept through Settings). */
function fromForm(): Record<string, unknown> {
  const settings = jsonObject(field('client-settings').value, 'settings') ?? {};
  const description = field('client-description').value.trim();
  return {
    ...settings,
    id: field('client-id').value.trim(),
    ...(description ? { description } : {}),
    grant_types: grantBoxes()
      .filter((b) => b.checked)
      .map((b) => b.value),
  };
}

async function save(event: SubmitEvent): Promise<void> {
  event.preventDefault();
  let record: Record<string, unknown>;
  try {
    record = fromForm();
  } catch (err) {
    if (!(err instanceof FieldError)) throw err;
    return showErrors('client', { [err.field]: [err.message] }, FIELDS);
  }
  const editing = state.selected;
  // A new client that gets tokens of its own needs a secret: made here, shown once below.
  const secret = !editing && (record.grant_types as string[]).includes('client_credentials') ? newSecret() : undefined;
  try {
    const saved = await writeRecord(form, editing, { ...record, ...(secret ? { secret } : {}) });
    if (secret) showSecret(secret);
    say(words`Saved ${chosen(saved.id)}.`);
  } catch (err) {
    showErrors('client', formErrors(err), FIELDS);
  }
}

function showSecret(secret: string): void {
  $('client-secret-value').textContent = secret;
  $('client-secret').hidden = false;
}

/** A new secret for the selected client: the stored record written back with it (PUT /Client/<id>). */
async function rotate(): Promise<void> {
  const client = state.selected;
  if (!client) return;
  const secret = newSecret();
  try {
    await api('PUT', `/Client/${encodeURIComponent(client.id)}`, { ...writable(client), secret });
    showErrors('client', {}, FIELDS);
    showSecret(secret);
    say(words`Rotated the secret of ${chosen(client.id)}: the old one no longer works.`);
  } catch (err) {
    hideSecret();
    showErrors('client', formErrors(err), FIELDS);
  }
}

export const clientsTab: Tab = {
  name: 'clients',
  start() {
    $('clients-filter').addEventListener('input', render);
    $('clients-new').addEventListener('click', () => {
      select(null);
      $('client-id').focus();
    });
    $('client-form').addEventListener('submit', (e) => void save(e));
    $('client-rotate').addEventListener('click', () => void rotate());
    // The box's own clients (409) and a Kubernetes resource's: the box says why.
    $('client-delete').addEventListener('click', () => void deleteRecord(form, state.selected));
    select(null);
  },
  show: load,
};
