// The Keys tab of the admin console: the box's signing keys as GET /keys lists them (which one
// signs, which are retired and until when they stay published), and Rotate (POST /keys/rotate),
// after a confirmation that says what becomes of the tokens already issued.
import { $, ApiError, api, button, cell, errorText, say, when, type Tab } from './console.js';

/** A key as GET /keys shows it (never its private half). */
interface Key {
  kid: string;
  alg: string;
  state: 'active' | 'retired';
  signs: ('access_token' | 'id_token')[];
  external: boolean;
  created_at: string;
  rotates_at: string | null;
  published_until: string | null;
}

const SIGNS: Record<Key['signs'][number], string> = { access_token: 'access tokens', id_token: 'ID tokens' };

/** The words of a tab the admin's policies do not open to them. */
export const forbidden = (what: string, request: string): string =>
  `You may not see ${what}: no AccessPolicy allows ${request} for your account.`;

function stateText(key: Key): string {
  if (key.state === 'active') return key.external ? 'active (BOXAUTH_SIGNING_KEY)' : 'active';
  return 'retired';
}

function publishedText(key: Key): string {
  if (key.state === 'active') return 'while it signs';
  return key.published_until ? `until ${when(key.published_until)} at least` : 'while a token it signed lives';
}

function keyRow(key: Key): HTMLTableRowElement {
  const row = document.createElement('tr');
  row.append(
    cell(key.kid),
    cell(key.alg),
    cell(stateText(key)),
    cell(key.signs.map((s) => SIGNS[s]).join(', ') || '—'),
    cell(when(key.created_at)),
    cell(key.rotates_at ? when(key.rotates_at) : '—'),
    cell(publishedText(key)),
  );
  if (key.state === 'active') row.className = 'active';
  return row;
}

function renderKeys(keys: Key[]): void {
  $('keys-rows').replaceChildren(...keys.map(keyRow));
  // The algorithms a rotation may name: those with a key the box made (BOXAUTH_SIGNING_KEY's is the operator's).
  const select = $<HTMLSelectElement>('keys-alg');
  const chosen = select.value;
  const rotatable = keys.filter((k) => k.state === 'active' && !k.external);
  select.replaceChildren(
    ...rotatable.map((k) =>
      Object.assign(document.createElement('option'), {
        value: k.alg,
        textContent: `${k.alg} (signs ${k.signs.map((s) => SIGNS[s]).join(' and ')})`,
      }),
    ),
  );
  const access = rotatable.find((k) => k.signs.includes('access_token'));
  select.value = rotatable.some((k) => k.alg === chosen) ? chosen : (access?.alg ?? rotatable[0]?.alg ?? '');
  button('keys-rotate').disabled = !rotatable.length;
}

async function loadKeys(): Promise<void> {
  try {
    renderKeys((await api<{ keys: Key[] }>('GET', '/keys')).keys);
    $('keys-error').textContent = '';
    $('keys-actions').hidden = false;
  } catch (err) {
    $('keys-rows').replaceChildren();
    $('keys-actions').hidden = true;
    $('keys-error').textContent =
      err instanceof ApiError && err.status === 403 ? forbidden('the signing keys', 'GET /keys') : errorText(err);
  }
}

async function rotate(): Promise<void> {
  const alg = $<HTMLSelectElement>('keys-alg').value;
  const sure = confirm(
    `Rotate the ${alg} key? A new key signs from now on. Tokens the current key signed keep working until they expire: ` +
      'it stays published at /.well-known/jwks.json, no longer signing, for as long as they may live (at least a day). ' +
      'Apps that verify tokens themselves find the new key there.',
  );
  if (!sure) return;
  try {
    const answer = await api<{ rotated: { kid: string }; keys: Key[] }>('POST', '/keys/rotate', { alg });
    renderKeys(answer.keys);
    $('keys-error').textContent = '';
    say(`Rotated the ${alg} key: ${answer.rotated.kid} signs from now on.`);
  } catch (err) {
    $('keys-error').textContent =
      err instanceof ApiError && err.status === 403 ? forbidden('rotate the keys', 'POST /keys/rotate') : errorText(err);
  }
}

export const keysTab: Tab = {
  name: 'keys',
  start() {
    $('keys-rotate').addEventListener('click', () => void rotate());
  },
  show: loadKeys,
};
