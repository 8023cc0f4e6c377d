// A tiny in-cluster client of a boxauth box: it authenticates with the Pod's own
// projected ServiceAccount token (no client secret anywhere) and re-reads the
// token file before every request, because the kubelet rotates it.
//
//   BOX_URL      the box's base URL, http://<box>.<namespace>.svc by default (the token's audience must be this URL)
//   TOKEN_FILE   the projected token (default /var/run/secrets/boxauth/token)
//   CLIENT_ID    optional: the box finds the client bound to the ServiceAccount
import fs from 'node:fs';

const box = process.env.BOX_URL ?? 'http://auth.team-a.svc';
const tokenFile = process.env.TOKEN_FILE ?? '/var/run/secrets/boxauth/token';

async function accessToken() {
  const body = new URLSearchParams({
    grant_type: 'client_credentials',
    client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
    client_assertion: fs.readFileSync(tokenFile, 'utf8').trim(),
  });
  if (process.env.CLIENT_ID) body.set('client_id', process.env.CLIENT_ID);
  const res = await fetch(`${box}/auth/token`, { method: 'POST', body });
  const answer = await res.json();
  if (!res.ok) throw new Error(`${answer.error}: ${answer.error_description}`);
  return answer;
}

for (;;) {
  try {
    const { access_token, expires_in } = await accessToken();
    console.log(`got a token (${access_token.length} characters${expires_in ? `, valid ${expires_in} s` : ''})`);
  } catch (err) {
    console.error(`token request refused: ${err.message}`);
  }
  await new Promise((r) => setTimeout(r, 60_000));
}
