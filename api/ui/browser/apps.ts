// The Apps tab (docs/guides/admin-console.md): each App of the cluster the box guards, with its
// hosts, its policies and its newest refusals the box kept, each explained on demand. An admin
// whose policies let them read one App but not list the box's opens it by its id: a delegated
// admin of that App sees it, its policies and its refusals, and nothing else.
import { $, api, cell, chosen, field, renderList, when, words, write, type Sentence, type Tab } from './console.js';
import { isForbidden, problemText, search, showExplanation, type Explanation, type Stored } from './records.js';
import { linksText } from './policies.js';

interface App extends Stored {
  urls: string[];
  audience?: string;
  signIn?: { client: string; identityProviders?: string[] };
}

interface Refusal {
  id: string;
  app: string;
  at: string;
  status: number;
  reason: string;
}

const state: { apps: App[]; selected: App | null } = { apps: [], selected: null };

const hostsOf = (app: App): string => app.urls.map((u) => u.replace(/^https?:\/\//, '')).join(', ');

function render(): void {
  renderList(
    'apps-list',
    state.apps,
    (a) => words`${chosen(a.id)} · ${hostsOf(a)}`,
    state.selected,
    field('apps-filter').value,
    (a) => void select(a),
    (a) => (a.meta?.managedBy ? 'Kubernetes' : undefined),
  );
}

async function load(): Promise<void> {
  try {
    state.apps = await search<App>('/App?_sort=id');
  } catch (err) {
    // A delegated admin may read their App without listing the box's: they open it by its id.
    $('apps-open').hidden = !isForbidden(err);
    write($('apps-error'), problemText(err, "list this box's Apps (open one you may read by its id)"));
    if (state.selected && !state.apps.some((a) => a.id === state.selected?.id)) state.apps = [state.selected];
    render();
    return;
  }
  $('apps-error').textContent = '';
  $('apps-open').hidden = true;
  render();
}

function item(sentence: Sentence): HTMLLIElement {
  const li = document.createElement('li');
  write(li, sentence);
  return li;
}
const empty = (text: string): HTMLLIElement => Object.assign(item(text), { className: 'empty' });

async function select(app: App): Promise<void> {
  state.selected = app;
  render();
  write($('app-title'), chosen(app.id));
  // The App's team wrote it: its direction its own (dir=auto isolates it, as <bdi> does).
  Object.assign($('app-description'), { textContent: app.description ?? '', dir: 'auto' });
  $('app-managed').hidden = !app.meta?.managedBy;
  write($('app-managed'), app.meta?.managedBy ? words`Managed by the Kubernetes resource ${chosen(app.meta.managedBy)}.` : '');
  $('app-error').textContent = '';
  $('app-hosts').replaceChildren(...app.urls.map((url) => item(url)));
  write(
    $('app-sign-in'),
    words`Tokens must carry the audience ${app.audience ?? app.urls[0] ?? ''}. ${
      app.signIn
        ? words`People sign in through the client ${chosen(app.signIn.client)}.`
        : 'People in browsers are not sent to sign in (refused with 401).'
    }`,
  );
  $('app-explain').hidden = true;
  $('app-sections').hidden = false;
  await Promise.all([loadPolicies(app), loadRefusals(app)]);
}

async function loadPolicies(app: App): Promise<void> {
  const list = $('app-policies');
  try {
    const policies = await search<Stored & { link?: { id: string; resourceType: 'Client' | 'User' | 'Group' }[]; dryRun?: boolean }>(
      `/AccessPolicy?app=${encodeURIComponent(app.id)}&_sort=id`,
    );
    if (state.selected?.id !== app.id) return;
    list.replaceChildren(...policies.map((p) => item(words`${chosen(p.id)}: applies to ${linksText(p)}${p.dryRun ? ' (dry run)' : ''}`)));
    if (!policies.length) list.append(empty('None: every request is refused (denied by default).'));
    $('app-policies-error').textContent = '';
  } catch (err) {
    list.replaceChildren();
    write($('app-policies-error'), problemText(err, words`see the policies of ${chosen(app.id)}`));
  }
}

async function loadRefusals(app: App): Promise<void> {
  const rows = $('app-refusals-rows');
  try {
    const refusals = await api<Refusal[]>('GET', `/authz/decisions?app=${encodeURIComponent(app.id)}&_count=20`);
    if (state.selected?.id !== app.id) return;
    rows.replaceChildren(
      ...refusals.map((r) => {
        const row = document.createElement('tr');
        const action = document.createElement('td');
        const explain = Object.assign(document.createElement('button'), { type: 'button', className: 'secondary', textContent: 'Explain' });
        explain.setAttribute('aria-label', `Explain the refusal of ${when(r.at)}`);
        explain.addEventListener('click', () => void showRefusal(app, r));
        action.append(explain);
        row.append(cell(when(r.at)), cell(String(r.status)), cell(r.reason), action);
        return row;
      }),
    );
    if (!refusals.length) {
      const row = document.createElement('tr');
      row.append(Object.assign(cell('None kept.'), { colSpan: 4, className: 'empty' }));
      rows.append(row);
    }
    $('app-refusals-error').textContent = '';
  } catch (err) {
    rows.replaceChildren();
    write($('app-refusals-error'), problemText(err, words`see the refusals at ${chosen(app.id)}`));
  }
}

/** A refusal explained (GET /authz/decisions/<id>?app=<App>: a policy granting this App's refusals grants this). */
async function showRefusal(app: App, refusal: Refusal): Promise<void> {
  try {
    const explained = await api<Explanation>('GET', `/authz/decisions/${refusal.id}?app=${encodeURIComponent(app.id)}`);
    showExplanation($('app-explain-verdict'), $('app-explain-rows'), explained);
    $('app-refusals-error').textContent = '';
    $('app-explain').hidden = false;
  } catch (err) {
    write($('app-refusals-error'), problemText(err, words`see why ${chosen(app.id)} refused this request`));
  }
}

/** An App opened by its id (GET /App/<id>), for an admin who may read it but not list the box's. */
async function open(event: SubmitEvent): Promise<void> {
  event.preventDefault();
  const id = field('apps-open-id').value.trim();
  if (!id) return;
  try {
    const app = await api<App>('GET', `/App/${encodeURIComponent(id)}`);
    if (!state.apps.some((a) => a.id === app.id)) state.apps = [...state.apps, app];
    $('app-error').textContent = '';
    await select(app);
  } catch (err) {
    $('app-sections').hidden = true;
    write($('app-title'), chosen(id));
    write($('app-error'), problemText(err, words`see the App ${chosen(id)}`));
  }
}

export const appsTab: Tab = {
  name: 'apps',
  start() {
    $('apps-filter').addEventListener('input', render);
    $('apps-open').addEventListener('submit', (e) => void open(e));
  },
  show: load,
};
