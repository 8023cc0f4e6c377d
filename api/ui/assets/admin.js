// The boxauth admin UI. It is an OAuth client of its own box: it signs in with
// the authorization code flow and PKCE (client boxauth-admin, first party), keeps
// the access token in sessionStorage (gone with the tab), and manages users and
// groups through the REST API with it.

const body = document.body;
const BASE = body.dataset.baseUrl;
const CLIENT_ID = body.dataset.clientId;
const REDIRECT_URI = `${BASE}/admin/callback`;
const $ = (id) => document.getElementById(id);

// ---------------------------------------------------------------- sign-in

const b64url = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
const randomString = () => b64url(crypto.getRandomValues(new Uint8Array(32)));

async function startSignIn() {
  const verifier = randomString();
  const state = randomString();
  sessionStorage.setItem('boxauth.pkce', JSON.stringify({ verifier, state }));
  const challenge = b64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
  const url = new URL(`${BASE}/auth/authorize`);
  url.search = new URLSearchParams({
    response_type: 'code', client_id: CLIENT_ID, redirect_uri: REDIRECT_URI, state,
    code_challenge: challenge, code_challenge_method: 'S256',
  }).toString();
  location.assign(url.toString());
}

async function finishSignIn() {
  const params = new URLSearchParams(location.search);
  const saved = JSON.parse(sessionStorage.getItem('boxauth.pkce') ?? 'null');
  sessionStorage.removeItem('boxauth.pkce');
  history.replaceState(null, '', '/admin');
  if (params.get('error')) throw new Error(`Sign-in failed: ${params.get('error_description') ?? params.get('error')}`);
  if (!saved || params.get('state') !== saved.state) throw new Error('Sign-in failed: the answer does not belong to this tab. Reload to try again.');
  const res = await fetch(`${BASE}/auth/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code', code: params.get('code') ?? '', redirect_uri: REDIRECT_URI,
      client_id: CLIENT_ID, code_verifier: saved.verifier,
    }),
  });
  const answer = await res.json();
  if (!res.ok) throw new Error(`Sign-in failed: ${answer.error_description ?? answer.error}`);
  sessionStorage.setItem('boxauth.token', answer.access_token);
}

// ---------------------------------------------------------------- API

class ApiError extends Error {
  constructor(status, body) {
    super(body?.error_description ?? `the box answered ${status}`);
    this.status = status;
    this.body = body;
  }
}

async function api(method, path, payload) {
  const token = sessionStorage.getItem('boxauth.token');
  const res = await fetch(`${BASE}${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, Accept: 'application/json', ...(payload ? { 'Content-Type': 'application/json' } : {}) },
    ...(payload ? { body: JSON.stringify(payload) } : {}),
  });
  const text = await res.text();
  const data = text ? JSON.parse(text) : undefined;
  if (res.status === 401) {
    // The token expired or was closed: sign in again.
    sessionStorage.removeItem('boxauth.token');
    await startSignIn();
    throw new ApiError(401, data);
  }
  if (!res.ok) throw new ApiError(res.status, data);
  return data;
}

async function all(path) {
  const items = [];
  for (let page = 1; ; page++) {
    const batch = await api('GET', `${path}?_count=1000&_page=${page}`);
    items.push(...batch);
    if (batch.length < 1000) return items;
  }
}

// ---------------------------------------------------------------- state

const state = { users: [], groups: [], selectedUser: null, selectedGroup: null };

function say(text) {
  $('app-status').textContent = text;
}

function showErrors(prefix, errors, fields) {
  for (const field of fields) {
    const el = $(`${prefix}-${field}-error`);
    if (el) el.textContent = (errors?.[field] ?? []).join(' ');
    const input = $(`${prefix}-${field}`);
    if (input) {
      if (errors?.[field]) input.setAttribute('aria-invalid', 'true');
      else input.removeAttribute('aria-invalid');
    }
  }
  const known = new Set(fields);
  const other = Object.entries(errors ?? {}).filter(([f]) => !known.has(f)).flatMap(([, m]) => m);
  $(`${prefix}-form-error`).textContent = other.join(' ');
}

// ---------------------------------------------------------------- lists

function renderList(listId, records, label, selected, filter, onSelect) {
  const list = $(listId);
  const needle = filter.trim().toLowerCase();
  const shown = records.filter((r) => label(r).toLowerCase().includes(needle));
  list.replaceChildren(...shown.map((record) => {
    const item = document.createElement('li');
    const button = document.createElement('button');
    button.type = 'button';
    button.textContent = label(record);
    button.setAttribute('aria-pressed', String(selected?.id === record.id));
    button.addEventListener('click', () => onSelect(record));
    item.append(button);
    return item;
  }));
  if (!shown.length) {
    const empty = document.createElement('li');
    empty.className = 'empty';
    empty.textContent = records.length ? 'Nothing matches the filter.' : 'None yet.';
    list.append(empty);
  }
}

const USER_FIELDS = ['email', 'email_verified', 'password', 'data', 'group-ids'];
const GROUP_FIELDS = ['name', 'description'];

function renderUsers() {
  renderList('users-list', state.users, (u) => u.email, state.selectedUser, $('users-filter').value, selectUser);
}

function renderGroups() {
  renderList('groups-list', state.groups, (g) => g.name, state.selectedGroup, $('groups-filter').value, selectGroup);
}

function renderGroupOptions(checked) {
  const box = $('user-groups-options');
  if (!state.groups.length) {
    box.replaceChildren(Object.assign(document.createElement('p'), { className: 'hint', textContent: 'No groups yet: create one in the Groups tab.' }));
    return;
  }
  box.replaceChildren(...state.groups.map((g) => {
    const label = document.createElement('label');
    label.className = 'check';
    const input = document.createElement('input');
    input.type = 'checkbox';
    input.name = 'group-ids';
    input.value = String(g.id);
    input.checked = checked.includes(g.id);
    label.append(input, ` ${g.name}`);
    return label;
  }));
}

// ---------------------------------------------------------------- users

function selectUser(user) {
  state.selectedUser = user;
  $('user-form-title').textContent = user ? `Edit ${user.email}` : 'New user';
  $('user-email').value = user?.email ?? '';
  // A new user's address is one the administrator enters: verified unless they untick it.
  $('user-email_verified').checked = user ? user.email_verified === true : true;
  $('user-password').value = '';
  $('user-password-hint').textContent = user ? 'Leave empty to keep the current password.' : '';
  $('user-data').value = user?.data ?? '';
  $('user-delete').disabled = !user;
  renderGroupOptions(user?.['group-ids'] ?? []);
  showErrors('user', {}, USER_FIELDS);
  renderUsers();
}

async function loadUsers() {
  state.users = await all('/users');
  if (state.selectedUser) state.selectedUser = state.users.find((u) => u.id === state.selectedUser.id) ?? null;
  renderUsers();
}

async function saveUser(event) {
  event.preventDefault();
  const data = $('user-data').value.trim();
  if (data) {
    try {
      JSON.parse(data);
    } catch {
      showErrors('user', { data: ['Data must be valid JSON.'] }, USER_FIELDS);
      $('user-data').focus();
      return;
    }
  }
  const payload = {
    email: $('user-email').value.trim(),
    data: data || null,
    'group-ids': [...document.querySelectorAll('#user-groups-options input:checked')].map((i) => Number(i.value)),
  };
  const password = $('user-password').value;
  if (password || !state.selectedUser) payload.password = password;
  // Sent only when it changes: saving another field never vouches for an address (nor withdraws it).
  const verified = $('user-email_verified').checked;
  if (!state.selectedUser || verified !== state.selectedUser.email_verified) payload.email_verified = verified;
  try {
    const saved = state.selectedUser
      ? await api('PUT', `/users/${state.selectedUser.id}`, payload)
      : await api('POST', '/users', payload);
    await loadUsers();
    selectUser(state.users.find((u) => u.id === saved.id) ?? null);
    say(`Saved ${saved.email}.`);
  } catch (err) {
    if (err.status === 422) showErrors('user', err.body.errors, USER_FIELDS);
    else showErrors('user', { form: [err.message] }, USER_FIELDS);
  }
}

async function deleteUser() {
  const user = state.selectedUser;
  if (!user) return;
  try {
    await api('DELETE', `/users/${user.id}`);
    selectUser(null);
    await loadUsers();
    say(`Deleted ${user.email}.`);
  } catch (err) {
    showErrors('user', { form: [err.message] }, USER_FIELDS);
  }
}

// ---------------------------------------------------------------- groups

function selectGroup(group) {
  state.selectedGroup = group;
  $('group-form-title').textContent = group ? `Edit ${group.name}` : 'New group';
  $('group-name').value = group?.name ?? '';
  $('group-description').value = group?.description ?? '';
  $('group-delete').disabled = !group;
  showErrors('group', {}, GROUP_FIELDS);
  renderGroups();
}

async function loadGroups() {
  state.groups = await all('/groups');
  if (state.selectedGroup) state.selectedGroup = state.groups.find((g) => g.id === state.selectedGroup.id) ?? null;
  renderGroups();
  renderGroupOptions(state.selectedUser?.['group-ids'] ?? []);
}

async function saveGroup(event) {
  event.preventDefault();
  const payload = { name: $('group-name').value.trim(), description: $('group-description').value.trim() || null };
  try {
    const saved = state.selectedGroup
      ? await api('PUT', `/groups/${state.selectedGroup.id}`, payload)
      : await api('POST', '/groups', payload);
    await loadGroups();
    selectGroup(state.groups.find((g) => g.id === saved.id) ?? null);
    say(`Saved ${saved.name}.`);
  } catch (err) {
    if (err.status === 422) showErrors('group', err.body.errors, GROUP_FIELDS);
    else showErrors('group', { form: [err.message] }, GROUP_FIELDS);
  }
}

async function deleteGroup() {
  const group = state.selectedGroup;
  if (!group) return;
  try {
    await api('DELETE', `/groups/${group.id}`);
    selectGroup(null);
    await Promise.all([loadGroups(), loadUsers()]);
    say(`Deleted ${group.name}.`);
  } catch (err) {
    showErrors('group', { form: [err.message] }, GROUP_FIELDS);
  }
}

// ---------------------------------------------------------------- tabs

function showTab(name) {
  for (const tab of ['users', 'groups']) {
    const active = tab === name;
    $(`tab-${tab}`).setAttribute('aria-selected', String(active));
    $(`tab-${tab}`).tabIndex = active ? 0 : -1;
    $(`panel-${tab}`).hidden = !active;
  }
}

function wireTabs() {
  const tabs = ['users', 'groups'];
  for (const [i, name] of tabs.entries()) {
    const tab = $(`tab-${name}`);
    tab.addEventListener('click', () => showTab(name));
    // Arrow keys move between tabs, as a tablist should.
    tab.addEventListener('keydown', (e) => {
      if (e.key !== 'ArrowRight' && e.key !== 'ArrowLeft') return;
      const next = tabs[(i + (e.key === 'ArrowRight' ? 1 : tabs.length - 1)) % tabs.length];
      showTab(next);
      $(`tab-${next}`).focus();
    });
  }
}

// ---------------------------------------------------------------- start

async function signOut() {
  await fetch(`${BASE}/Session`, { method: 'DELETE', headers: { Authorization: `Bearer ${sessionStorage.getItem('boxauth.token')}` } }).catch(() => {});
  sessionStorage.removeItem('boxauth.token');
  location.assign(`${BASE}/auth/sign-out?return_to=${encodeURIComponent('/admin')}`);
}

async function start() {
  try {
    if (location.pathname.endsWith('/admin/callback')) await finishSignIn();
    if (!sessionStorage.getItem('boxauth.token')) return startSignIn();
    $('sign-out').hidden = false;
    $('sign-out').addEventListener('click', signOut);
    await Promise.all([loadGroups(), loadUsers()]);
  } catch (err) {
    if (err.status === 401) return;
    say(err.status === 403
      ? 'Your account may not manage this box: ask an administrator to add you to a group an AccessPolicy allows.'
      : err.message);
    $('sign-out').hidden = false;
    return;
  }
  say('');
  $('tabs').hidden = false;
  wireTabs();
  $('users-filter').addEventListener('input', renderUsers);
  $('groups-filter').addEventListener('input', renderGroups);
  $('users-new').addEventListener('click', () => { selectUser(null); $('user-email').focus(); });
  $('groups-new').addEventListener('click', () => { selectGroup(null); $('group-name').focus(); });
  $('user-form').addEventListener('submit', saveUser);
  $('group-form').addEventListener('submit', saveGroup);
  $('user-delete').addEventListener('click', deleteUser);
  $('group-delete').addEventListener('click', deleteGroup);
  selectUser(null);
  selectGroup(null);
}

start();
