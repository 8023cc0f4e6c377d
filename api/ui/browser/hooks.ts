// The Hooks tab (docs/guides/admin-console.md, docs/guides/hooks.md): the box's Hooks, the filter
// that narrows as you type, Save and Delete, as the Clients tab does. The moments are boxes, the
// URL and the failure policy fields of their own, the rest of the record Settings' JSON. The
// signing secret is write-only: typed here, sent once, never shown (the box keeps it sealed); an
// empty field keeps the one the box holds. A record a Kubernetes resource owns is read-only here.
import { $, button, chosen, field, formErrors, renderList, say, showErrors, words, write, type Tab } from './console.js';
import { deleteRecord, FieldError, jsonObject, readRecords, showOwner, writeRecord, type RecordForm, type Stored } from './records.js';

interface Hook extends Stored {
  moments: string[];
  url?: string;
  failurePolicy?: 'Fail' | 'Ignore';
  [key: string]: unknown;
}

const FIELDS = ['id', 'description', 'moments', 'url', 'failurePolicy', 'settings', 'secret'];
/** The fields the form shows of its own; the rest of the record is Settings' JSON. */
const OWN_FIELDS = new Set(['id', 'description', 'moments', 'url', 'failurePolicy', 'resourceType', 'meta']);

const state: { hooks: Hook[]; selected: Hook | null } = { hooks: [], selected: null };

const form: RecordForm<Hook> = { kind: 'Hook', prefix: 'hook', fields: FIELDS, records: () => state.hooks, select, load };

const momentBoxes = (): HTMLInputElement[] => Array.from(document.querySelectorAll<HTMLInputElement>('#hook-moments input'));

function render(): void {
  renderList(
    'hooks-list',
    state.hooks,
    (h) => chosen(h.id),
    state.selected,
    field('hooks-filter').value,
    select,
    (h) => (h.meta?.managedBy ? 'Kubernetes' : undefined),
  );
}

function select(hook: Hook | null): void {
  state.selected = hook;
  write($('hook-form-title'), hook ? words`Edit ${chosen(hook.id)}` : 'New hook');
  field('hook-id').value = hook?.id ?? '';
  field('hook-id').readOnly = hook !== null; // the id is the record's name: a new name is a new hook
  field('hook-description').value = hook?.description ?? '';
  const moments = hook?.moments ?? [];
  for (const box of momentBoxes()) box.checked = moments.includes(box.value);
  field('hook-url').value = hook?.url ?? '';
  field('hook-failurePolicy').value = hook?.failurePolicy ?? 'Fail';
  field('hook-secret').value = '';
  const rest = hook ? Object.fromEntries(Object.entries(hook).filter(([k]) => !OWN_FIELDS.has(k))) : {};
  field('hook-settings').value = Object.keys(rest).length ? JSON.stringify(rest, null, 2) : '';
  showOwner('hook', hook);
  button('hook-delete').disabled = !hook;
  showErrors('hook', {}, FIELDS);
  render();
}

async function load(): Promise<void> {
  ({ records: state.hooks, selected: state.selected } = await readRecords<Hook>(
    '/Hook?_sort=id',
    'hooks-error',
    "see this box's hooks",
    state.selected,
  ));
  render();
}

/** The record the form describes (the stored one's other fields kept through Settings), with a secret typed. */
function fromForm(): Record<string, unknown> {
  const settings = jsonObject(field('hook-settings').value, 'settings') ?? {};
  const description = field('hook-description').value.trim();
  const url = field('hook-url').value.trim();
  const secret = field('hook-secret').value.trim();
  return {
    ...settings,
    id: field('hook-id').value.trim(),
    ...(description ? { description } : {}),
    moments: momentBoxes()
      .filter((b) => b.checked)
      .map((b) => b.value),
    ...(url ? { url } : {}),
    failurePolicy: field('hook-failurePolicy').value,
    ...(secret ? { secret } : {}),
  };
}

async function save(event: SubmitEvent): Promise<void> {
  event.preventDefault();
  let record: Record<string, unknown>;
  try {
    record = fromForm();
  } catch (err) {
    if (!(err instanceof FieldError)) throw err;
    return showErrors('hook', { [err.field]: [err.message] }, FIELDS);
  }
  try {
    const saved = await writeRecord(form, state.selected, record);
    say(words`Saved ${chosen(saved.id)}.`);
  } catch (err) {
    showErrors('hook', formErrors(err), FIELDS);
  }
}

export const hooksTab: Tab = {
  name: 'hooks',
  start() {
    $('hooks-filter').addEventListener('input', render);
    $('hooks-new').addEventListener('click', () => {
      select(null);
      $('hook-id').focus();
    });
    $('hook-form').addEventListener('submit', (e) => void save(e));
    $('hook-delete').addEventListener('click', () => void deleteRecord(form, state.selected));
    select(null);
  },
  show: load,
};
