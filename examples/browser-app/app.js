// An example browser app of a boxauth box: the implicit flow (tokens in the URL
// fragment) and the authorization code flow with PKCE (code exchanged at the
// box's token endpoint from the browser; the box answers CORS for it). With the
// scope openid it is an OpenID Connect relying party: it sends a nonce and shows
// the ID token's claims (who signed in).
const b64url = (bytes) =>
  btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
const random = () => b64url(crypto.getRandomValues(new Uint8Array(32)));
const callbackUrl = () => new URL('callback.html', location.href).toString();
const $ = (id) => document.getElementById(id);

async function signIn(flow) {
  const box = $('box').value.replace(/\/+$/, '');
  const client = $('client').value;
  const scope = $('scope').value;
  const openid = scope.split(/\s+/).includes('openid');
  const state = random();
  const verifier = random();
  const nonce = random();
  sessionStorage.setItem('example.request', JSON.stringify({ box, client, state, verifier, nonce, flow }));
  const params = new URLSearchParams({ client_id: client, redirect_uri: callbackUrl(), state, scope });
  // OpenID Connect Core 3.2.2.1: the implicit flow's nonce is required; the code flow's binds the ID token to this sign-in too.
  if (openid) params.set('nonce', nonce);
  if (flow === 'implicit') {
    params.set('response_type', openid ? 'id_token token' : 'token');
  } else {
    params.set('response_type', 'code');
    params.set('code_challenge', b64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
    params.set('code_challenge_method', 'S256');
  }
  location.assign(`${box}/auth/authorize?${params}`);
}

/** The claims of a JWT, read without checking its signature (see showClaims). */
function claimsOf(jwt) {
  const payload = (jwt.split('.')[1] ?? '').replace(/-/g, '+').replace(/_/g, '/');
  return JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(payload), (c) => c.charCodeAt(0))));
}

function showError(outcome, error) {
  $('error').textContent = error;
  $('error-row').hidden = false;
  $('outcome').textContent = outcome;
}

/**
 * Shows who signed in. The ID token came straight from the box (the fragment of its redirect, or
 * its token endpoint over TLS), so this page only checks that it is the answer to its own request
 * (the nonce); a server that passes an ID token on must check its signature against the box's
 * keys (jwks_uri), its iss, aud and exp (OpenID Connect Core 3.1.3.7), e.g. with the jose library.
 */
function showClaims(idToken, request) {
  let claims;
  try {
    claims = claimsOf(idToken);
  } catch {
    showError('The ID token is unreadable.', 'not a JWT');
    return false;
  }
  if (claims.nonce !== request.nonce) {
    showError('The ID token is not the answer to this sign-in (nonce differs).', 'nonce mismatch');
    return false;
  }
  $('claims').textContent = JSON.stringify(claims, null, 2);
  $('claims-row').hidden = false;
  return true;
}

async function callback() {
  const request = JSON.parse(sessionStorage.getItem('example.request') ?? 'null');
  const fromFragment = new URLSearchParams(location.hash.slice(1));
  const fromQuery = new URLSearchParams(location.search);
  const answer = ['access_token', 'id_token', 'error'].some((k) => fromFragment.has(k)) ? fromFragment : fromQuery;
  $('flow').textContent = request?.flow ?? 'unknown';
  $('state').textContent = answer.get('state') ?? '';
  if (answer.get('error')) {
    showError('The box refused.', `${answer.get('error')}: ${answer.get('error_description') ?? ''}`);
    return;
  }
  if (!request || answer.get('state') !== request.state) {
    $('outcome').textContent = 'The answer does not match the request (state differs).';
    return;
  }
  let token = answer.get('access_token');
  let expires = answer.get('expires_in');
  let idToken = answer.get('id_token');
  if (!token && answer.get('code')) {
    const res = await fetch(`${request.box}/auth/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: answer.get('code'),
        redirect_uri: callbackUrl(),
        client_id: request.client,
        code_verifier: request.verifier,
      }),
    });
    const body = await res.json();
    if (!res.ok) {
      showError('The code exchange failed.', `${body.error}: ${body.error_description}`);
      return;
    }
    token = body.access_token;
    expires = body.expires_in;
    idToken = body.id_token ?? null;
  }
  history.replaceState(null, '', location.pathname); // the tokens should not linger in the address bar
  $('token').textContent = token;
  $('expires').textContent = expires ? `${expires} s` : 'until signed out';
  if (idToken && !showClaims(idToken, request)) return;
  $('outcome').textContent = idToken
    ? 'Signed in: the app holds an access token and an ID token.'
    : 'Signed in: the app holds an access token.';
  if (idToken) await startSession(idToken);
}

/**
 * The app's own session, at its server (serve.mjs): made from the ID token, which the server checks
 * against the box's keys, and ended by the box's logout token when the person signs out there, or
 * is signed out (back-channel logout). The page asks every few seconds whether it still lives.
 */
async function startSession(idToken) {
  const res = await fetch('session', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ id_token: idToken }),
  });
  if (!res.ok) return;
  $('session').textContent = 'open (this app signs you out when the box does)';
  const watch = setInterval(async () => {
    if ((await fetch('session')).status !== 401) return;
    clearInterval(watch);
    $('session').textContent = 'ended by the box (back-channel logout)';
  }, 3000);
}

if (location.pathname.endsWith('callback.html')) {
  callback();
} else {
  const query = new URLSearchParams(location.search);
  if (query.get('box')) $('box').value = query.get('box');
  if (query.get('client_id')) $('client').value = query.get('client_id');
  $('implicit').addEventListener('click', () => signIn('implicit'));
  $('code').addEventListener('click', () => signIn('code'));
}
