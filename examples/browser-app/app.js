// An example browser app of a boxauth box: the implicit flow (token in the URL
// fragment) and the authorization code flow with PKCE (code exchanged at the
// box's token endpoint from the browser; the box answers CORS for it).
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
  const state = random();
  const verifier = random();
  sessionStorage.setItem('example.request', JSON.stringify({ box, client, state, verifier, flow }));
  const params = new URLSearchParams({ client_id: client, redirect_uri: callbackUrl(), state, scope: $('scope').value });
  if (flow === 'implicit') {
    params.set('response_type', 'token');
  } else {
    params.set('response_type', 'code');
    params.set('code_challenge', b64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
    params.set('code_challenge_method', 'S256');
  }
  location.assign(`${box}/auth/authorize?${params}`);
}

async function callback() {
  const request = JSON.parse(sessionStorage.getItem('example.request') ?? 'null');
  const fromFragment = new URLSearchParams(location.hash.slice(1));
  const fromQuery = new URLSearchParams(location.search);
  const answer = fromFragment.has('access_token') || fromFragment.has('error') ? fromFragment : fromQuery;
  $('flow').textContent = request?.flow ?? 'unknown';
  $('state').textContent = answer.get('state') ?? '';
  if (answer.get('error')) {
    $('error').textContent = `${answer.get('error')}: ${answer.get('error_description') ?? ''}`;
    $('outcome').textContent = 'The box refused.';
    return;
  }
  if (!request || answer.get('state') !== request.state) {
    $('outcome').textContent = 'The answer does not match the request (state differs).';
    return;
  }
  let token = answer.get('access_token');
  let expires = answer.get('expires_in');
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
      $('error').textContent = `${body.error}: ${body.error_description}`;
      $('outcome').textContent = 'The code exchange failed.';
      return;
    }
    token = body.access_token;
    expires = body.expires_in;
  }
  history.replaceState(null, '', location.pathname); // the token should not linger in the address bar
  $('token').textContent = token;
  $('expires').textContent = expires ? `${expires} s` : 'until signed out';
  $('outcome').textContent = 'Signed in: the app holds an access token.';
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
