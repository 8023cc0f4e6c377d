// The admin console's views of people that admin.ts's Users, Groups and Sessions tabs show beside
// their forms (docs/concepts/users-and-groups.md): a person's linked identities (with Unlink) and
// what their directory wrote of them (SCIM, read-only), a group's members (add by email, remove),
// and the box's signed-in browsers (with End). Each asks the REST API with the admin's token; one
// the admin's policies refuse says so in its own place and leaves the rest of the console be.
import {
  $,
  ApiError,
  all,
  api,
  cell,
  chosen,
  endButton,
  errorText,
  factorsText,
  field,
  say,
  when,
  words,
  write,
  type Sentence,
} from './console.js';

/** A person as GET /users and GET /users/<id> show them (the one record also carries `scim`). */
export interface Person {
  id: number;
  email: string;
  active?: boolean;
  'group-ids'?: number[];
  scim?: Record<string, unknown> | null;
}

interface Identity {
  provider: string;
  subject: string;
  email: string | null;
  linked_at: string;
  last_used_at: string;
}

interface BrowserSignIn {
  sid: string;
  user: number;
  email: string;
  since: string;
  expires_at: string;
  amr: string[];
  address: string | null;
  user_agent: string | null;
}

/** What a refusal says in the place it refused: a 403 is the admin's policies, anything else the error. */
function refusal(err: unknown, what: string): string {
  return err instanceof ApiError && err.status === 403 ? `Your account may not see ${what}.` : errorText(err);
}

const emptyItem = (text: string): HTMLLIElement => Object.assign(document.createElement('li'), { className: 'empty', textContent: text });

function itemWith(text: Sentence, action: HTMLButtonElement): HTMLLIElement {
  const item = document.createElement('li');
  const span = document.createElement('span');
  write(span, text);
  item.append(span, action);
  return item;
}

function actionButton(text: string, label: string, act: () => Promise<void>): HTMLButtonElement {
  const b = Object.assign(document.createElement('button'), { type: 'button', className: 'danger', textContent: text });
  b.setAttribute('aria-label', label);
  b.addEventListener('click', () => void act());
  return b;
}

// ---------------------------------------------------------------- a person

/** The person shown now: an answer about another, slower than the click that left them, is dropped. */
let shownPerson: number | undefined;

/** Under the person's form: their directory's attributes and their linked identities (none for a new person). */
export function showPerson(person: Person | null): void {
  shownPerson = person?.id;
  $('user-scim').hidden = true;
  $('user-identities').hidden = true;
  if (person) void Promise.all([loadDirectoryAttributes(person), loadIdentities(person)]);
}

/** A SCIM attribute's value as text: a name's parts as the directory formatted them, other objects as JSON. */
function attributeText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && typeof (value as { formatted?: unknown }).formatted === 'string')
    return (value as { formatted: string }).formatted;
  if (value && typeof value === 'object') {
    const { givenName, familyName } = value as { givenName?: unknown; familyName?: unknown };
    if (typeof givenName === 'string' || typeof familyName === 'string')
      return [givenName, familyName].filter((p) => typeof p === 'string').join(' ');
  }
  return JSON.stringify(value);
}

/** What the person's directory wrote of them, read-only: shown only for a person a directory provisioned. */
async function loadDirectoryAttributes(person: Person): Promise<void> {
  let found: Person;
  try {
    found = await api<Person>('GET', `/users/${person.id}`);
  } catch {
    return; // the list showed them; a token that may not read the one record leaves this out
  }
  if (shownPerson !== person.id || !found.scim) return;
  const { externalId, name, displayName, ...rest } = found.scim;
  const rows: [string, unknown][] = [
    ['Name', name],
    ['Display name', displayName],
    ['External id', externalId],
    ['Active', found.active === false ? 'no: turned off' : 'yes'],
    ...Object.entries(rest),
  ];
  $('user-scim-list').replaceChildren(
    ...rows
      .filter(([, value]) => value !== undefined && value !== null)
      .flatMap(([term, value]) => [
        Object.assign(document.createElement('dt'), { textContent: term }),
        // What a directory wrote (a name, a title): its direction its own (dir=auto isolates it, as <bdi> does).
        Object.assign(document.createElement('dd'), { textContent: attributeText(value), dir: 'auto' }),
      ]),
  );
  $('user-scim').hidden = false;
}

async function loadIdentities(person: Person): Promise<void> {
  let identities: Identity[];
  try {
    identities = await api<Identity[]>('GET', `/users/${person.id}/identities`);
  } catch (err) {
    if (shownPerson !== person.id) return;
    $('user-identities-list').replaceChildren();
    $('user-identities-error').textContent = refusal(err, "this person's linked identities");
    $('user-identities').hidden = false;
    return;
  }
  if (shownPerson !== person.id) return;
  $('user-identities-list').replaceChildren(
    ...identities.map((i) =>
      itemWith(
        words`${chosen(i.provider)} · ${chosen(i.email ?? i.subject)} · linked ${when(i.linked_at)}, last used ${when(i.last_used_at)}`,
        actionButton('Unlink', `Unlink ${i.provider}`, () => unlink(person, i.provider)),
      ),
    ),
  );
  if (!identities.length) $('user-identities-list').append(emptyItem('None: they sign in with the box alone.'));
  $('user-identities-error').textContent = '';
  $('user-identities').hidden = false;
}

async function unlink(person: Person, provider: string): Promise<void> {
  try {
    await api('DELETE', `/users/${person.id}/identities/${encodeURIComponent(provider)}`);
    say(words`Unlinked ${chosen(provider)} from ${chosen(person.email)}.`);
  } catch (err) {
    $('user-identities-error').textContent = refusal(err, "this person's linked identities");
  }
  await loadIdentities(person);
}

// ---------------------------------------------------------------- a group's members

let shownGroup: { id: number; name: string } | undefined;
/** Called when a membership changed here: the Users tab's records hold the people's groups. */
let membershipChanged: () => Promise<void> = async () => undefined;

/** Under the group's form: its members, each with Remove, and a field to add one by email. */
export function showMembers(group: { id: number; name: string } | null, changed: () => Promise<void>): void {
  shownGroup = group ?? undefined;
  membershipChanged = changed;
  field('group-member-email').value = '';
  $('group-members-error').textContent = '';
  $('group-members').hidden = !group;
  if (group) void loadMembers(group);
}

/** The API keeps memberships on the person (`group-ids`): the members are the people whose list holds the group. */
async function loadMembers(group: { id: number; name: string }): Promise<Person[] | undefined> {
  let people: Person[];
  try {
    people = await all<Person>('/users');
  } catch (err) {
    if (shownGroup?.id === group.id) $('group-members-error').textContent = refusal(err, 'the people of this box');
    return undefined;
  }
  if (shownGroup?.id !== group.id) return undefined;
  const members = people.filter((p) => p['group-ids']?.includes(group.id));
  $('group-members-list').replaceChildren(
    ...members.map((m) =>
      itemWith(
        m.active === false ? words`${chosen(m.email)} (turned off)` : chosen(m.email),
        actionButton('Remove', `Remove ${m.email} from ${group.name}`, async () => void (await setMember(group, m, false))),
      ),
    ),
  );
  if (!members.length) $('group-members-list').append(emptyItem('No members.'));
  $('group-member-choices').replaceChildren(
    ...people
      .filter((p) => !p['group-ids']?.includes(group.id))
      .map((p) => Object.assign(document.createElement('option'), { value: p.email })),
  );
  return people;
}

/** Adds the person named in the field (their email, in any case, as the box compares them). */
async function addMember(): Promise<void> {
  const group = shownGroup;
  const email = field('group-member-email').value.trim();
  if (!group || !email) return;
  let found: Person[];
  try {
    found = await api<Person[]>('GET', `/users?${new URLSearchParams({ email })}`);
  } catch (err) {
    $('group-members-error').textContent = refusal(err, 'the people of this box');
    return;
  }
  if (!found[0]) {
    write($('group-members-error'), words`Nobody has the email ${chosen(email)}.`);
    return;
  }
  if (await setMember(group, found[0], true)) field('group-member-email').value = '';
}

/**
 * Puts the person in the group or takes them out: their record's groups, read just before and
 * written back whole (PUT takes the full list), as `boxauth group add-member` does.
 */
async function setMember(group: { id: number; name: string }, person: Person, member: boolean): Promise<boolean> {
  try {
    const now = (await api<Person>('GET', `/users/${person.id}`))['group-ids'] ?? [];
    const ids = member ? [...new Set([...now, group.id])] : now.filter((id) => id !== group.id);
    await api('PUT', `/users/${person.id}`, { 'group-ids': ids });
    say(
      member
        ? words`Added ${chosen(person.email)} to ${chosen(group.name)}.`
        : words`Removed ${chosen(person.email)} from ${chosen(group.name)}.`,
    );
    $('group-members-error').textContent = '';
  } catch (err) {
    $('group-members-error').textContent = refusal(err, 'or change the people of this box');
    return false;
  }
  await Promise.all([loadMembers(group), membershipChanged()]);
  return true;
}

// ---------------------------------------------------------------- the box's signed-in browsers

/** The Sessions tab's signed-in browsers, with its filter (part of an email); a client names grants, not browsers. */
export async function loadBrowsers(): Promise<void> {
  const q = field('sessions-filter').value.trim();
  const client = field('sessions-client').value.trim();
  let browsers: BrowserSignIn[];
  try {
    browsers = await api<BrowserSignIn[]>('GET', `/sign-ins?${new URLSearchParams({ _count: '200', ...(q ? { q } : {}) })}`);
  } catch (err) {
    $('browsers-error').textContent = refusal(err, "the box's signed-in browsers");
    $('browsers-rows').replaceChildren();
    $('browsers-count').textContent = '';
    return;
  }
  // An answer to an older filter than the one now typed is dropped.
  if (q !== field('sessions-filter').value.trim()) return;
  $('browsers-error').textContent = '';
  const rows = browsers.map((b) => {
    const row = document.createElement('tr');
    const end = document.createElement('td');
    end.append(endButton(`End the browser session of ${b.email} since ${when(b.since)}`, () => endBrowser(b)));
    row.append(
      cell(chosen(b.email)),
      cell(when(b.since)),
      cell(when(b.expires_at)),
      cell(factorsText(b.amr)),
      cell(b.address ?? ''),
      cell(b.user_agent ? chosen(b.user_agent) : ''),
      end,
    );
    return row;
  });
  if (!rows.length) {
    const row = document.createElement('tr');
    row.append(Object.assign(cell(q ? 'Nothing matches the filter.' : 'No signed-in browsers.'), { colSpan: 7, className: 'empty' }));
    rows.push(row);
  }
  $('browsers-rows').replaceChildren(...rows);
  const count =
    browsers.length === 200
      ? 'The newest 200 signed-in browsers: narrow the filter to see others.'
      : `${browsers.length} signed-in browser${browsers.length === 1 ? '' : 's'}.`;
  $('browsers-count').textContent = client ? `${count} The client filter narrows the grants only.` : count;
}

/** Called when a browser ended: the grants issued through it ended with it. */
let grantsChanged: () => Promise<void> = async () => undefined;

async function endBrowser(b: BrowserSignIn): Promise<void> {
  try {
    await api('DELETE', `/users/${b.user}/sessions/${b.sid}`);
    say(words`Signed out a browser of ${chosen(b.email)}.`);
  } catch (err) {
    $('browsers-error').textContent = refusal(err, "the box's signed-in browsers");
  }
  await Promise.all([loadBrowsers(), grantsChanged()]);
}

/** Wires the members' Add button and the Enter key in its field, once the console has started; `grants` reloads the grants' table. */
export function startPeople(grants: () => Promise<void>): void {
  grantsChanged = grants;
  $('group-member-add').addEventListener('click', () => void addMember());
  $('group-member-email').addEventListener('keydown', (e) => {
    if (e.key !== 'Enter') return;
    e.preventDefault(); // the field sits in the group's form: Enter adds, it does not save the group
    void addMember();
  });
}
