// The boxauth admin console (docs/concepts/users-and-groups.md). It is an OAuth client of its own
// box (./console.ts signs in and calls the REST API); this module holds the Users, Groups, Sessions
// and Identity providers tabs and starts the console, and each other tab is a module of its own,
// listed in TABS below.
//
// It runs in the browser: tsc compiles it to dist/api/ui/browser/admin.js, which the box serves as
// /assets/admin.js (api/http/routes/admin.ts), and ./console.js beside it.
import {
  $,
  ApiError,
  all,
  api,
  BASE,
  button,
  cell,
  checkbox,
  chosen,
  endButton,
  errorText,
  factorsText,
  field,
  finishSignIn,
  formErrors,
  plainText,
  renderList,
  nodes,
  readText,
  say,
  showErrors,
  startSignIn,
  when,
  words,
  write,
  type Tab,
  type Words,
} from './console.js';
import type { FactorKind } from '../../factor-kinds.js';
import { loadBrowsers, showMembers, showPerson, startPeople } from './people.js';
import { clientsTab } from './clients.js';
import { policiesTab } from './policies.js';
import { hooksTab } from './hooks.js';
import { appsTab } from './apps.js';
import { eventsTab } from './events.js';
import { keysTab } from './keys.js';
import { settingsTab } from './settings.js';

interface User {
  id: number;
  email: string;
  email_verified?: boolean;
  must_verify_email?: boolean;
  active?: boolean;
  data?: string | null;
  'group-ids'?: number[];
}

interface Group {
  id: number;
  name: string;
  description?: string | null;
  require_second_factor?: boolean;
}

/** A person's factors as GET /users/<id>/factors shows them (never a key or secret). */
interface Factors {
  factors: { id: number; kind: FactorKind; name: string; created_at: string; last_used_at: string | null }[];
  recovery_codes_left: number;
  must_enrol: boolean;
  group_requires: boolean;
}

/** A signed-in browser and a grant to an app, as /users/<id>/sessions and /grants show them. */
interface SignIn {
  sid: string;
  since: string;
  amr: string[];
  address: string | null;
  user_agent: string | null;
}
interface Grant {
  id: string;
  user?: number;
  email?: string;
  client: string;
  since: string;
  last_used: string;
  amr: string[];
  address: string | null;
  /** An agent's client: a Client ID Metadata Document's, or a dynamic registration's (api/oauth/agents.ts). */
  agent?: { kind: 'metadata-document' | 'dynamic'; client_name: string | null } | null;
}

/** The client of a grant as the console names it: an agent's says so, with the name it gave itself and how it came. */
function clientLabel(g: Grant): Words {
  if (!g.agent) return [chosen(g.client)];
  const how = g.agent.kind === 'dynamic' ? 'registered dynamically' : 'metadata document';
  const named = g.agent.client_name ? words` "${chosen(g.agent.client_name)}"` : [];
  return words`Agent${named}: ${chosen(g.client)} (${how})`;
}

/** An error body of the box: error_description, and for a 422 the fields' errors. */
/** An identity provider as /IdentityProvider shows it (never its secret). */
interface Provider {
  id: string;
  type: string;
  displayName?: string;
  disabled?: boolean;
  meta?: { managedBy?: string };
}

// ---------------------------------------------------------------- state

const state: { users: User[]; groups: Group[]; selectedUser: User | null; selectedGroup: Group | null } = {
  users: [],
  groups: [],
  selectedUser: null,
  selectedGroup: null,
};

const USER_FIELDS = ['email', 'email_verified', 'active', 'password', 'data', 'group-ids'];
const GROUP_FIELDS = ['name', 'description', 'require_second_factor'];

function renderUsers(): void {
  renderList(
    'users-list',
    state.users,
    (u) => chosen(u.email),
    state.selectedUser,
    field('users-filter').value,
    selectUser,
    // Turned off by their directory (SCIM) or through the API: they cannot sign in.
    (u) => (u.active === false ? 'turned off' : undefined),
  );
}

function renderGroups(): void {
  renderList(
    'groups-list',
    state.groups,
    (g) => chosen(g.name),
    state.selectedGroup,
    field('groups-filter').value,
    selectGroup,
    (g) => (g.require_second_factor ? 'second factor' : undefined),
  );
}

function renderGroupOptions(checked: number[]): void {
  const box = $('user-groups-options');
  if (!state.groups.length) {
    box.replaceChildren(
      Object.assign(document.createElement('p'), { className: 'hint', textContent: 'No groups yet: create one in the Groups tab.' }),
    );
    return;
  }
  box.replaceChildren(
    ...state.groups.map((g) => {
      const label = document.createElement('label');
      label.className = 'check';
      const input = document.createElement('input');
      input.type = 'checkbox';
      input.name = 'group-ids';
      input.value = String(g.id);
      input.checked = checked.includes(g.id);
      label.append(input, ' ', ...nodes(chosen(g.name)));
      return label;
    }),
  );
}

// ---------------------------------------------------------------- users

function selectUser(user: User | null): void {
  state.selectedUser = user;
  write($('user-form-title'), user ? words`Edit ${chosen(user.email)}` : 'New user');
  field('user-email').value = user?.email ?? '';
  // A new user's address is one the administrator enters: verified unless they untick it.
  checkbox('user-email_verified').checked = user ? user.email_verified === true : true;
  // A new person is on; turning them off is a change of someone who exists.
  checkbox('user-active').checked = user?.active !== false;
  checkbox('user-active').disabled = !user;
  field('user-password').value = '';
  $('user-password-hint').textContent = user ? 'Leave empty to keep the current password.' : '';
  field('user-data').value = user?.data ?? '';
  button('user-delete').disabled = !user;
  renderGroupOptions(user?.['group-ids'] ?? []);
  showErrors('user', {}, USER_FIELDS);
  renderUsers();
  $('user-factors').hidden = true;
  $('user-sessions').hidden = true;
  $('user-verification-state').textContent = user ? verificationState(user) : '';
  showPerson(user);
  if (user) void Promise.all([loadFactors(user), loadSessions(user)]);
}

/** What the box says of the address, beside the checkbox that vouches for it. */
function verificationState(user: User): string {
  if (user.active === false) return 'Turned off (by their directory, or through the API): they cannot sign in until turned on again.';
  if (user.email_verified) return 'Verified: by its link, or vouched for by an administrator.';
  if (user.must_verify_email)
    return 'Not verified yet: they cannot sign in until they follow the link mailed to them. Vouching for it ends the password, factors and sign-ins of whoever made the account.';
  return 'Not verified: apps are told the address is unproven. Vouching for it ends the password, factors and sign-ins of whoever made the account.';
}

/**
 * Each kind's label, as the page hands it (api/ui/admin.ts data-factor-kinds, from api/factor-kinds.ts):
 * a new kind needs no line here; a kind the page does not name (a newer release's) is shown by its name.
 */
const KIND_NAMES = JSON.parse(document.body.dataset.factorKinds ?? '{}') as Partial<Record<FactorKind, string>>;

/** The selected person's factors, under their form. */
async function loadFactors(user: User): Promise<void> {
  let found: Factors;
  try {
    found = await api<Factors>('GET', `/users/${user.id}/factors`);
  } catch {
    return; // a token that may not read factors: the section stays hidden
  }
  if (state.selectedUser?.id !== user.id) return;
  const list = $('user-factors-list');
  list.replaceChildren(
    ...found.factors.map((f) => {
      const used = f.last_used_at ? `last used ${new Date(f.last_used_at).toLocaleString()}` : 'never used';
      const item = document.createElement('li');
      write(item, words`${KIND_NAMES[f.kind] ?? f.kind} “${chosen(f.name)}” · ${used}`);
      return item;
    }),
  );
  if (!found.factors.length) list.append(Object.assign(document.createElement('li'), { className: 'empty', textContent: 'None.' }));
  $('user-factors-state').textContent = [
    `${found.recovery_codes_left} recovery code${found.recovery_codes_left === 1 ? '' : 's'} left.`,
    ...(found.must_enrol ? ['Enrols a second factor at the next sign-in.'] : []),
    ...(found.group_requires ? ['A group of theirs requires a second factor.'] : []),
  ].join(' ');
  $('user-factors').hidden = false;
}

async function resetFactors(): Promise<void> {
  const user = state.selectedUser;
  if (!user) return;
  const sure = confirm(
    plainText(words`Reset the second factors of ${chosen(user.email)}?`) +
      ` Their passkeys, authenticator app and recovery codes are removed, ` +
      'they are signed out everywhere, and they enrol a new factor at their next sign-in.',
  );
  if (!sure) return;
  try {
    await api('POST', `/users/${user.id}/factors/reset`);
    await loadFactors(user);
    say(words`Reset the second factors of ${chosen(user.email)}.`);
  } catch (err) {
    showErrors('user', { form: [errorText(err)] }, USER_FIELDS);
  }
}

// ---------------------------------------------------------------- sessions

function sessionItem(text: Words, label: string, end: () => Promise<void>): HTMLLIElement {
  const item = document.createElement('li');
  const span = document.createElement('span');
  write(span, text);
  item.append(span, endButton(label, end));
  return item;
}

const emptyItem = (): HTMLLIElement => Object.assign(document.createElement('li'), { className: 'empty', textContent: 'None.' });

/** The selected person's signed-in browsers and grants, under their form, each with an End button. */
async function loadSessions(user: User): Promise<void> {
  let found: { browsers: SignIn[]; grants: Grant[] };
  try {
    found = await api<{ browsers: SignIn[]; grants: Grant[] }>('GET', `/users/${user.id}/sessions`);
  } catch {
    return; // a token that may not read sessions: the section stays hidden
  }
  if (state.selectedUser?.id !== user.id) return;
  const from = (address: string | null): string => (address ? ` from ${address}` : '');
  $('user-browsers-list').replaceChildren(
    ...found.browsers.map((b) =>
      sessionItem(
        words`Since ${when(b.since)}${from(b.address)} · ${factorsText(b.amr)}${b.user_agent ? words` · ${chosen(b.user_agent)}` : ''}`,
        `End the browser session since ${when(b.since)}${from(b.address)}`,
        () => endSession(user, `/users/${user.id}/sessions/${b.sid}`, 'Signed out a browser of'),
      ),
    ),
  );
  if (!found.browsers.length) $('user-browsers-list').append(emptyItem());
  $('user-grants-list').replaceChildren(
    ...found.grants.map((g) =>
      sessionItem(
        words`${clientLabel(g)} · since ${when(g.since)}, last used ${when(g.last_used)}${from(g.address)} · ${factorsText(g.amr)}`,
        `End the grant to ${readText(clientLabel(g))} since ${when(g.since)}`,
        () => endSession(user, `/users/${user.id}/grants/${g.id}`, 'Ended a grant of'),
      ),
    ),
  );
  if (!found.grants.length) $('user-grants-list').append(emptyItem());
  $('user-sessions-error').textContent = '';
  $('user-sessions').hidden = false;
}

async function endSession(user: User, path: string, done: string): Promise<void> {
  try {
    await api('DELETE', path);
    say(words`${done} ${chosen(user.email)}.`);
  } catch (err) {
    $('user-sessions-error').textContent = errorText(err);
  }
  await loadSessions(user);
}

async function endAllSessions(): Promise<void> {
  const user = state.selectedUser;
  if (!user) return;
  if (
    !confirm(
      `${plainText(words`End every session of ${chosen(user.email)}?`)} They are signed out of every browser and every app's tokens stop working.`,
    )
  )
    return;
  await endSession(user, `/users/${user.id}/sessions`, 'Ended every session of');
}

/** The Sessions tab: the box's live grants, filtered by part of an email and by client. */
async function loadBoxSessions(): Promise<void> {
  const query = new URLSearchParams({ _count: '200' });
  const q = field('sessions-filter').value.trim();
  const client = field('sessions-client').value.trim();
  if (q) query.set('q', q);
  if (client) query.set('client', client);
  let grants: Grant[];
  try {
    grants = await api<Grant[]>('GET', `/grants?${query}`);
  } catch (err) {
    $('sessions-error').textContent = errorText(err);
    return;
  }
  // An answer to an older filter than the one now typed is dropped.
  if (q !== field('sessions-filter').value.trim() || client !== field('sessions-client').value.trim()) return;
  $('sessions-error').textContent = '';
  const rows = grants.map((g) => {
    const row = document.createElement('tr');
    const end = document.createElement('td');
    end.append(
      endButton(`End the grant of ${g.email ?? ''} to ${g.client}`, async () => {
        try {
          await api('DELETE', `/users/${g.user}/grants/${g.id}`);
          say(words`Ended a grant of ${chosen(g.email ?? '')} to ${chosen(g.client)}.`);
        } catch (err) {
          $('sessions-error').textContent = errorText(err);
        }
        await loadBoxSessions();
      }),
    );
    if (g.agent) row.className = 'agent';
    row.append(
      cell(chosen(g.email ?? '')),
      cell(clientLabel(g)),
      cell(when(g.since)),
      cell(when(g.last_used)),
      cell(factorsText(g.amr)),
      cell(g.address ?? ''),
      end,
    );
    return row;
  });
  if (!rows.length) {
    const row = document.createElement('tr');
    row.append(Object.assign(cell(q || client ? 'Nothing matches the filter.' : 'No live grants.'), { colSpan: 7, className: 'empty' }));
    rows.push(row);
  }
  $('sessions-rows').replaceChildren(...rows);
  $('sessions-count').textContent =
    grants.length === 200
      ? 'The newest 200 grants: narrow the filter to see others.'
      : `${grants.length} live grant${grants.length === 1 ? '' : 's'}.`;
}

/** Clients to pick from in the Sessions tab's filter, when the token may list them. */
async function loadClientChoices(): Promise<void> {
  try {
    const found = await api<{ entry: { resource: { id: string } }[] }>('GET', '/Client?_count=1000');
    $('sessions-clients').replaceChildren(
      ...found.entry.map((e) => Object.assign(document.createElement('option'), { value: e.resource.id })),
    );
  } catch {
    // typed by hand then
  }
}

/** The Identity providers tab: read-only; they are written with `boxauth idp`, the REST API or Kubernetes. */
async function loadProviders(): Promise<void> {
  let providers: Provider[];
  try {
    const found = await api<{ entry: { resource: Provider }[] }>('GET', '/IdentityProvider?_count=1000&_sort=id');
    providers = found.entry.map((e) => e.resource);
  } catch (err) {
    $('providers-error').textContent = errorText(err);
    return;
  }
  $('providers-error').textContent = '';
  const rows = providers.map((p) => {
    const row = document.createElement('tr');
    row.append(
      cell(chosen(p.id)),
      cell(p.type),
      cell(chosen(p.displayName ?? p.id)),
      cell(p.disabled ? 'yes' : 'no'),
      cell(p.meta?.managedBy ? chosen(p.meta.managedBy) : ''),
    );
    return row;
  });
  if (!rows.length) {
    const row = document.createElement('tr');
    row.append(
      Object.assign(cell("No identity providers: people sign in with the box's own passwords and passkeys."), {
        colSpan: 5,
        className: 'empty',
      }),
    );
    rows.push(row);
  }
  $('providers-rows').replaceChildren(...rows);
}

/** The Sessions tab's two tables: the live grants, and the signed-in browsers (./people.ts). */
async function loadEverySession(): Promise<void> {
  await Promise.all([loadBoxSessions(), loadBrowsers()]);
}

let filterTimer: ReturnType<typeof setTimeout> | undefined;
function filterSessions(): void {
  clearTimeout(filterTimer);
  filterTimer = setTimeout(() => void loadEverySession(), 200);
}

async function loadUsers(): Promise<void> {
  state.users = await all<User>('/users');
  const selected = state.selectedUser;
  if (selected) state.selectedUser = state.users.find((u) => u.id === selected.id) ?? null;
  renderUsers();
}

async function saveUser(event: SubmitEvent): Promise<void> {
  event.preventDefault();
  const data = field('user-data').value.trim();
  if (data) {
    try {
      JSON.parse(data);
    } catch {
      showErrors('user', { data: ['Data must be valid JSON.'] }, USER_FIELDS);
      $('user-data').focus();
      return;
    }
  }
  const payload: Record<string, unknown> = {
    email: field('user-email').value.trim(),
    data: data || null,
    'group-ids': Array.from(document.querySelectorAll<HTMLInputElement>('#user-groups-options input:checked'), (i) => Number(i.value)),
  };
  const password = field('user-password').value;
  if (password || !state.selectedUser) payload.password = password;
  // Sent only when it changes: saving another field never vouches for an address (nor withdraws it).
  const verified = checkbox('user-email_verified').checked;
  if (!state.selectedUser || verified !== state.selectedUser.email_verified) payload.email_verified = verified;
  // Sent only when it changes too: off ends what the person obtained (the box does it in the same write).
  const active = checkbox('user-active').checked;
  if (state.selectedUser && active !== (state.selectedUser.active !== false)) payload.active = active;
  if (state.selectedUser && verified && !confirmAdoption(state.selectedUser, String(payload.email), Boolean(password))) return;
  try {
    const saved = state.selectedUser
      ? await api<User>('PUT', `/users/${state.selectedUser.id}`, payload)
      : await api<User>('POST', '/users', payload);
    await loadUsers();
    selectUser(state.users.find((u) => u.id === saved.id) ?? null);
    say(words`Saved ${chosen(saved.email)}.`);
  } catch (err) {
    showErrors('user', formErrors(err), USER_FIELDS);
  }
}

/**
 * Vouching for the address an account holds and never proved adopts the account (docs/concepts/
 * users-and-groups.md): whoever made it loses it, so the administrator is asked first. A new
 * address vouched for is not an adoption; a change of case is no new address.
 */
function confirmAdoption(user: User, email: string, newPassword: boolean): boolean {
  const unproven = user.email_verified !== true || user.must_verify_email === true;
  if (!unproven || email.toLowerCase() !== user.email.toLowerCase()) return true;
  return confirm(
    `${plainText(words`Vouch for ${chosen(user.email)}?`)} Nobody proved this address: whoever made the account (someone who signed up with it, say) ` +
      `loses it. Its ${newPassword ? '' : 'password, '}second factors, linked providers and every sign-in end.`,
  );
}

async function deleteUser(): Promise<void> {
  const user = state.selectedUser;
  if (!user) return;
  try {
    await api('DELETE', `/users/${user.id}`);
    selectUser(null);
    await loadUsers();
    say(words`Deleted ${chosen(user.email)}.`);
  } catch (err) {
    showErrors('user', { form: [errorText(err)] }, USER_FIELDS);
  }
}

// ---------------------------------------------------------------- groups

function selectGroup(group: Group | null): void {
  state.selectedGroup = group;
  write($('group-form-title'), group ? words`Edit ${chosen(group.name)}` : 'New group');
  field('group-name').value = group?.name ?? '';
  field('group-description').value = group?.description ?? '';
  checkbox('group-require_second_factor').checked = group?.require_second_factor === true;
  button('group-delete').disabled = !group;
  showErrors('group', {}, GROUP_FIELDS);
  renderGroups();
  showMembers(group, membersChanged);
}

/** A membership changed in the Groups tab: the people's records, and the groups ticked in the person's form, follow. */
async function membersChanged(): Promise<void> {
  await loadUsers();
  if (state.selectedUser) renderGroupOptions(state.selectedUser['group-ids'] ?? []);
}

async function loadGroups(): Promise<void> {
  state.groups = await all<Group>('/groups');
  const selected = state.selectedGroup;
  if (selected) state.selectedGroup = state.groups.find((g) => g.id === selected.id) ?? null;
  renderGroups();
  renderGroupOptions(state.selectedUser?.['group-ids'] ?? []);
}

async function saveGroup(event: SubmitEvent): Promise<void> {
  event.preventDefault();
  const payload = {
    name: field('group-name').value.trim(),
    description: field('group-description').value.trim() || null,
    require_second_factor: checkbox('group-require_second_factor').checked,
  };
  try {
    const saved = state.selectedGroup
      ? await api<Group>('PUT', `/groups/${state.selectedGroup.id}`, payload)
      : await api<Group>('POST', '/groups', payload);
    await loadGroups();
    selectGroup(state.groups.find((g) => g.id === saved.id) ?? null);
    say(words`Saved ${chosen(saved.name)}.`);
  } catch (err) {
    showErrors('group', formErrors(err), GROUP_FIELDS);
  }
}

async function deleteGroup(): Promise<void> {
  const group = state.selectedGroup;
  if (!group) return;
  try {
    await api('DELETE', `/groups/${group.id}`);
    selectGroup(null);
    await Promise.all([loadGroups(), loadUsers()]);
    say(words`Deleted ${chosen(group.name)}.`);
  } catch (err) {
    showErrors('group', { form: [errorText(err)] }, GROUP_FIELDS);
  }
}

// ---------------------------------------------------------------- tabs

/** The tabs, in the order of the tablist (api/ui/admin.ts). */
const TABS: Tab[] = [
  { name: 'users' },
  { name: 'groups' },
  { name: 'sessions', show: loadEverySession },
  { name: 'providers', show: loadProviders },
  clientsTab,
  policiesTab,
  appsTab,
  hooksTab,
  keysTab,
  settingsTab,
  eventsTab,
];

function showTab(name: string): void {
  for (const tab of TABS) {
    const active = tab.name === name;
    $(`tab-${tab.name}`).setAttribute('aria-selected', String(active));
    $(`tab-${tab.name}`).tabIndex = active ? 0 : -1;
    $(`panel-${tab.name}`).hidden = !active;
    if (active) void tab.show?.();
  }
}

function wireTabs(): void {
  for (const [i, { name }] of TABS.entries()) {
    const tab = $(`tab-${name}`);
    tab.addEventListener('click', () => showTab(name));
    // Arrow keys move between tabs, as a tablist should.
    tab.addEventListener('keydown', (e) => {
      if (e.key !== 'ArrowRight' && e.key !== 'ArrowLeft') return;
      const next = TABS[(i + (e.key === 'ArrowRight' ? 1 : TABS.length - 1)) % TABS.length]!.name;
      showTab(next);
      $(`tab-${next}`).focus();
    });
  }
  for (const tab of TABS) void tab.start?.();
}

// ---------------------------------------------------------------- start

async function signOut(): Promise<void> {
  await fetch(`${BASE}/Session`, {
    method: 'DELETE',
    headers: { Authorization: `Bearer ${sessionStorage.getItem('boxauth.token')}` },
  }).catch(
    () => undefined, // signed out here either way; the box ends the session when the token expires
  );
  sessionStorage.removeItem('boxauth.token');
  location.assign(`${BASE}/auth/sign-out?return_to=${encodeURIComponent('/admin')}`);
}

async function start(): Promise<void> {
  let peopleRefused = false;
  try {
    if (location.pathname.endsWith('/admin/callback')) await finishSignIn();
    if (!sessionStorage.getItem('boxauth.token')) return await startSignIn();
    $('sign-out').hidden = false;
    $('sign-out').addEventListener('click', () => void signOut());
    // An admin of some records only (one App's, say) may not read people: the other tabs still work.
    peopleRefused = await Promise.all([loadGroups(), loadUsers()]).then(
      () => false,
      (err: unknown) => {
        if (err instanceof ApiError && err.status === 403) return true;
        throw err;
      },
    );
  } catch (err) {
    const status = err instanceof ApiError ? err.status : undefined;
    if (status === 401) return;
    say(
      status === 403
        ? 'Your account may not manage this box: ask an administrator to add you to a group an AccessPolicy allows.'
        : errorText(err),
    );
    $('sign-out').hidden = false;
    return;
  }
  say('');
  $('tabs').hidden = false;
  wireTabs();
  $('users-filter').addEventListener('input', renderUsers);
  $('groups-filter').addEventListener('input', renderGroups);
  $('sessions-filter').addEventListener('input', filterSessions);
  $('sessions-client').addEventListener('input', filterSessions);
  $('user-sessions-end-all').addEventListener('click', () => void endAllSessions());
  void loadClientChoices();
  startPeople(loadBoxSessions);
  $('users-new').addEventListener('click', () => {
    selectUser(null);
    $('user-email').focus();
  });
  $('groups-new').addEventListener('click', () => {
    selectGroup(null);
    $('group-name').focus();
  });
  $('user-form').addEventListener('submit', (e) => void saveUser(e));
  $('group-form').addEventListener('submit', (e) => void saveGroup(e));
  $('user-delete').addEventListener('click', () => void deleteUser());
  $('user-factors-reset').addEventListener('click', () => void resetFactors());
  $('group-delete').addEventListener('click', () => void deleteGroup());
  selectUser(null);
  selectGroup(null);
  if (peopleRefused) {
    say(
      'Your account may not manage this box: ask an administrator to add you to a group an AccessPolicy allows. ' +
        'Each tab shows what your policies let you see.',
    );
    for (const list of ['users-list', 'groups-list'])
      $(list).replaceChildren(Object.assign(document.createElement('li'), { className: 'empty', textContent: 'You may not see these.' }));
  }
}

void start();
