// The admin console's common parts, for admin.ts and each tab's module: the sign-in through the
// box's own authorization code flow (client boxauth-admin, PKCE; the access token in sessionStorage,
// gone with the tab), the calls to the REST API with it, the status line, a form's errors and the
// lists. The box serves each compiled module of api/ui/browser/ as /assets/<name>.js
// (api/http/routes/admin.ts); a module imports the others as './<name>.js', and types from the rest of
// the repository only (they vanish in the output).
import type { FieldErrors } from '../../errors.js';
import { Chosen, partsOf, readText, type Sentence } from './names.js';

export { chosen, plainText, readText, words, type Sentence, type Words } from './names.js';

/**
 * A tab of the console: `tab-<name>` and `panel-<name>` in api/ui/admin.ts. `start` runs once the
 * admin is signed in; `show` each time the tab is opened. A tab whose API answers 403 says so in its
 * panel and leaves the others be.
 */
export interface Tab {
  name: string;
  start?(): void | Promise<void>;
  show?(): void | Promise<void>;
}

export interface ErrorBody {
  error?: string;
  error_description?: string;
  errors?: FieldErrors;
}

const body = document.body;
export const BASE = body.dataset.baseUrl ?? '';
export const CLIENT_ID = body.dataset.clientId ?? '';
const REDIRECT_URI = `${BASE}/admin/callback`;

/** The page's element with this id (api/ui/admin.ts writes every one the script uses). */
export function $<E extends HTMLElement = HTMLElement>(id: string): E {
  const element = document.getElementById(id);
  if (!element) throw new Error(`the admin page has no element #${id}`);
  return element as E;
}
export const field = (id: string): HTMLInputElement | HTMLTextAreaElement => $<HTMLInputElement | HTMLTextAreaElement>(id);
export const checkbox = (id: string): HTMLInputElement => $<HTMLInputElement>(id);
export const button = (id: string): HTMLButtonElement => $<HTMLButtonElement>(id);

// ---------------------------------------------------------------- sign-in

const b64url = (bytes: ArrayBuffer | Uint8Array): string =>
  btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
const randomString = (): string => b64url(crypto.getRandomValues(new Uint8Array(32)));

export async function startSignIn(): Promise<void> {
  const verifier = randomString();
  const state = randomString();
  sessionStorage.setItem('boxauth.pkce', JSON.stringify({ verifier, state }));
  const challenge = b64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
  const url = new URL(`${BASE}/auth/authorize`);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: CLIENT_ID,
    redirect_uri: REDIRECT_URI,
    state,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }).toString();
  location.assign(url.toString());
}

export async function finishSignIn(): Promise<void> {
  const params = new URLSearchParams(location.search);
  const saved = JSON.parse(sessionStorage.getItem('boxauth.pkce') ?? 'null') as { verifier: string; state: string } | null;
  sessionStorage.removeItem('boxauth.pkce');
  history.replaceState(null, '', '/admin');
  if (params.get('error')) throw new Error(`Sign-in failed: ${params.get('error_description') ?? params.get('error')}`);
  if (!saved || params.get('state') !== saved.state)
    throw new Error('Sign-in failed: the answer does not belong to this tab. Reload to try again.');
  const res = await fetch(`${BASE}/auth/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code: params.get('code') ?? '',
      redirect_uri: REDIRECT_URI,
      client_id: CLIENT_ID,
      code_verifier: saved.verifier,
    }),
  });
  const answer = (await res.json()) as ErrorBody & { access_token?: string };
  if (!res.ok) throw new Error(`Sign-in failed: ${answer.error_description ?? answer.error}`);
  if (!answer.access_token) throw new Error('Sign-in failed: the box answered no access token');
  sessionStorage.setItem('boxauth.token', answer.access_token);
}

// ---------------------------------------------------------------- API

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: ErrorBody | undefined,
  ) {
    super(body?.error_description ?? `the box answered ${status}`);
  }
}

export async function api<T>(method: string, path: string, payload?: unknown): Promise<T> {
  const token = sessionStorage.getItem('boxauth.token');
  const res = await fetch(`${BASE}${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, Accept: 'application/json', ...(payload ? { 'Content-Type': 'application/json' } : {}) },
    ...(payload ? { body: JSON.stringify(payload) } : {}),
  });
  const text = await res.text();
  const data: unknown = text ? JSON.parse(text) : undefined;
  if (res.status === 401) {
    // The token expired or was closed: sign in again.
    sessionStorage.removeItem('boxauth.token');
    await startSignIn();
    throw new ApiError(401, data as ErrorBody);
  }
  if (!res.ok) throw new ApiError(res.status, data as ErrorBody);
  return data as T;
}

export async function all<T>(path: string): Promise<T[]> {
  const items: T[] = [];
  for (let page = 1; ; page++) {
    const batch = await api<T[]>('GET', `${path}?_count=1000&_page=${page}`);
    items.push(...batch);
    if (batch.length < 1000) return items;
  }
}

export const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** A 422's field errors, or the error as the form's. */
export const formErrors = (err: unknown): FieldErrors =>
  err instanceof ApiError && err.status === 422 && err.body?.errors ? err.body.errors : { form: [errorText(err)] };

/** A sentence's nodes: its text, and each name in a <bdi> of its own (./names.ts says why). */
export const nodes = (sentence: Sentence): (string | HTMLElement)[] =>
  partsOf(sentence).map((part) =>
    part instanceof Chosen ? Object.assign(document.createElement('bdi'), { textContent: part.name }) : part,
  );

/** `element` holding the sentence, and nothing else. */
export function write(element: HTMLElement, sentence: Sentence): void {
  element.replaceChildren(...nodes(sentence));
}

export function say(sentence: Sentence): void {
  write($('app-status'), sentence);
}

/** The errors under their fields (and the rest above the form); any error clears the status line's last news. */
export function showErrors(prefix: string, errors: FieldErrors | undefined, fields: string[]): void {
  if (Object.keys(errors ?? {}).length) say('');
  for (const field of fields) {
    const el = document.getElementById(`${prefix}-${field}-error`);
    if (el) el.textContent = (errors?.[field] ?? []).join(' ');
    const input = document.getElementById(`${prefix}-${field}`);
    if (input) {
      if (errors?.[field]) input.setAttribute('aria-invalid', 'true');
      else input.removeAttribute('aria-invalid');
    }
  }
  const known = new Set(fields);
  const other = Object.entries(errors ?? {})
    .filter(([f]) => !known.has(f))
    .flatMap(([, m]) => m);
  $(`${prefix}-form-error`).textContent = other.join(' ');
}

// ---------------------------------------------------------------- lists

export function renderList<R extends { id: number | string }>(
  listId: string,
  records: R[],
  label: (record: R) => Sentence,
  selected: R | null,
  filter: string,
  onSelect: (record: R) => void,
  badge: (record: R) => string | undefined = () => undefined,
): void {
  const list = $(listId);
  const needle = filter.trim().toLowerCase();
  const shown = records.filter((r) => readText(label(r)).toLowerCase().includes(needle));
  list.replaceChildren(
    ...shown.map((record) => {
      const item = document.createElement('li');
      const button = document.createElement('button');
      button.type = 'button';
      write(button, label(record));
      const note = badge(record);
      if (note) button.append(' ', Object.assign(document.createElement('span'), { className: 'badge', textContent: note }));
      button.setAttribute('aria-pressed', String(selected?.id === record.id));
      button.addEventListener('click', () => onSelect(record));
      item.append(button);
      return item;
    }),
  );
  if (!shown.length) {
    const empty = document.createElement('li');
    empty.className = 'empty';
    empty.textContent = records.length ? 'Nothing matches the filter.' : 'None yet.';
    list.append(empty);
  }
}

const FACTOR_NAMES: Record<string, string> = {
  pwd: 'password',
  otp: 'one-time code',
  hwk: 'passkey',
  swk: 'passkey',
  user: 'user presence',
};

/** What a sign-in proved, in words (RFC 8176 amr values; mfa says only that there were two). */
export const factorsText = (amr: string[]): string =>
  [...new Set(amr.filter((a) => a !== 'mfa').map((a) => FACTOR_NAMES[a] ?? a))].join(' + ') || 'unknown';
/** A table cell holding text (never markup), its names isolated. */
export function cell(sentence: Sentence): HTMLTableCellElement {
  const td = document.createElement('td');
  write(td, sentence);
  return td;
}
export const when = (iso: string): string => new Date(iso).toLocaleString();

export function endButton(label: string, end: () => Promise<void>): HTMLButtonElement {
  const b = Object.assign(document.createElement('button'), { type: 'button', className: 'danger', textContent: 'End' });
  b.setAttribute('aria-label', label);
  b.addEventListener('click', () => void end());
  return b;
}
