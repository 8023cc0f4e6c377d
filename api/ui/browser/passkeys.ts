// The passkeys script of the box's pages (docs/guides/passkeys.md). tsc compiles it to
// dist/api/ui/browser/passkeys.js, which the box serves as /assets/passkeys.js
// (api/http/routes/admin.ts); it loads @simplewebauthn/browser's own bundle from the box
// (/assets/simplewebauthn-browser.js), never from elsewhere. Type-only imports vanish.
//
// It wires what a page has, by element id:
// - the sign-in page: the browser's passkey autofill on the email field (conditional
//   mediation: `autocomplete="username webauthn"`), and #sign-in-passkey;
// - the second-factor page: #use-passkey; the enrolment and passkeys pages: #add-passkey.
// Each button names the box's endpoints (data-begin: the options, data-finish: the answer);
// every call carries the page's CSRF token (x-csrf-token), and the box answers where the
// browser goes next ({ location }).
import type * as WebAuthn from '@simplewebauthn/browser';

type Library = Pick<
  typeof WebAuthn,
  'startAuthentication' | 'startRegistration' | 'browserSupportsWebAuthn' | 'browserSupportsWebAuthnAutofill'
>;

async function library(): Promise<Library> {
  // The UMD bundle, run as a module, sets globalThis.SimpleWebAuthnBrowser.
  await import(new URL('./simplewebauthn-browser.js', import.meta.url).href);
  return (globalThis as unknown as { SimpleWebAuthnBrowser: Library }).SimpleWebAuthnBrowser;
}

/** The page's value of a form field (its CSRF token, where the sign-in goes back to). */
function pageValue(name: string): string | undefined {
  const input = document.querySelector<HTMLInputElement>(`input[name="${name}"]`);
  return input?.value || new URLSearchParams(location.search).get(name) || undefined;
}

/**
 * The script's words in the page's language: the page writes them on its error line
 * (api/ui/frame.ts passkeyButton, from the catalogue), English when a page has none.
 */
function said(name: 'closed' | 'failed' | 'answered', fallback: string): string {
  return document.getElementById('passkey-error')?.dataset[name] || fallback;
}

function showError(message: string): void {
  const error = document.getElementById('passkey-error');
  if (!error) return;
  error.textContent = message;
  error.hidden = false;
}

async function call(url: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const res = await fetch(url, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'Content-Type': 'application/json', 'x-csrf-token': pageValue('csrf') ?? '' },
    body: JSON.stringify(body),
  });
  const answer = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  // A refusal that says where to go (confirm it is you first) takes the browser there.
  if (!res.ok && typeof answer.location === 'string') location.assign(answer.location);
  if (!res.ok)
    throw new Error(
      typeof answer.error === 'string'
        ? answer.error
        : said('answered', 'The box answered {status}.').replace('{status}', String(res.status)),
    );
  return answer;
}

/** Where the sign-in goes on to, as the page says it. */
const target = (): Record<string, unknown> => ({ return_to: pageValue('return_to'), acr: pageValue('acr') });

function go(answer: Record<string, unknown>): void {
  if (typeof answer.location === 'string') location.assign(answer.location);
}

async function authenticate(lib: Library, begin: string, finish: string, autofill: boolean): Promise<void> {
  const optionsJSON = (await call(begin, {})) as unknown as Parameters<Library['startAuthentication']>[0]['optionsJSON'];
  const response = await lib.startAuthentication({ optionsJSON, useBrowserAutofill: autofill });
  go(await call(finish, { response, ...target() }));
}

async function register(lib: Library, begin: string, finish: string): Promise<void> {
  const optionsJSON = (await call(begin, {})) as unknown as Parameters<Library['startRegistration']>[0]['optionsJSON'];
  const response = await lib.startRegistration({ optionsJSON });
  const name = document.querySelector<HTMLInputElement>('#passkey-name')?.value ?? '';
  go(await call(finish, { response, name, ...target() }));
}

const failed = (err: unknown): void =>
  showError(
    err instanceof Error && err.name === 'NotAllowedError'
      ? said('closed', 'The passkey prompt was closed or timed out. Try again.')
      : err instanceof Error
        ? err.message
        : said('failed', 'Something went wrong. Try again.'),
  );

async function main(): Promise<void> {
  // WebAuthn wants a domain for the relying party: a box on an address offers no passkey.
  if (/^[0-9.]+$|^\[/.test(location.hostname)) return;
  const lib = await library();
  if (!lib.browserSupportsWebAuthn()) return;
  for (const id of ['sign-in-passkey', 'use-passkey', 'add-passkey']) {
    const button = document.getElementById(id) as HTMLButtonElement | null;
    const { begin, finish } = button?.dataset ?? {};
    if (!button || !begin || !finish) continue;
    button.hidden = false;
    button.addEventListener('click', () => {
      button.disabled = true;
      (id === 'add-passkey' ? register(lib, begin, finish) : authenticate(lib, begin, finish, false)).catch(failed).finally(() => {
        button.disabled = false;
      });
    });
  }
  // The sign-in page: the browser offers its passkeys for this box in the email field's autofill.
  const signIn = document.getElementById('sign-in-passkey') as HTMLButtonElement | null;
  const email = document.querySelector<HTMLInputElement>('input#email[autocomplete~="webauthn"]');
  if (signIn?.dataset.begin && signIn.dataset.finish && email && (await lib.browserSupportsWebAuthnAutofill()))
    // A person who picks one is signed in; one who types a password instead ends the prompt by
    // leaving the page. Nothing was asked of the person, so a browser that aborts or declines the
    // quiet request (no passkey for this box: some browsers decline at once) shows no error; the
    // box's refusal of a passkey picked from the list does.
    authenticate(lib, signIn.dataset.begin, signIn.dataset.finish, true).catch((err: unknown) => {
      if (!(err instanceof Error && (err.name === 'AbortError' || err.name === 'NotAllowedError'))) failed(err);
    });
}

void main();
