// The example app's server: node examples/browser-app/serve.mjs [port] (default $PORT, else 3000; 0: a free one, printed);
// BOX_URL: the box it signs in with (default http://localhost:8080); CLIENT_ID: its client there
// (default example-app). It serves the page's files, and keeps the app's own session: the page
// hands it the ID token it received (POST /session), and the box ends that session with a logout
// token (POST /backchannel-logout, OpenID Connect Back-Channel Logout 1.0: the Client's
// backchannel_logout_uri, docs/guides/sign-out-everywhere.md).
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { createRemoteJWKSet, jwtVerify } from 'jose';

const dir = path.dirname(fileURLToPath(import.meta.url));
const port = Number(process.argv[2] ?? process.env.PORT ?? 3000);
const types = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.css': 'text/css' };
const box = (process.env.BOX_URL ?? 'http://localhost:8080').replace(/\/+$/, '');
const clientId = process.env.CLIENT_ID ?? 'example-app';
const boxKeys = createRemoteJWKSet(new URL(`${box}/.well-known/jwks.json`));
const LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';

/** The app's sessions, by the id its cookie holds: whom the box said signed in, and in which of its sessions (sid). */
const sessions = new Map();
/** The jti of each logout token taken, until it expires: one sent again is a replay (§2.6 step 10). */
const takenLogouts = new Map();

/** A JSON answer; the session's answers are never cached (§2.8: "Cache-Control: no-store"). */
const answer = (res, status, body, headers = {}) =>
  res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store', ...headers }).end(JSON.stringify(body));

async function bodyOf(req) {
  let body = '';
  for await (const chunk of req) {
    body += chunk;
    if (body.length > 65_536) throw new Error('body too large');
  }
  return body;
}

const cookieSession = (req) => /(?:^|;\s*)app_session=([\w-]+)/.exec(req.headers.cookie ?? '')?.[1];

/**
 * POST /session {"id_token": …}: the page's ID token, checked as a server must (OpenID Connect Core
 * 3.1.3.7: the box's signature, iss, aud, exp), makes a session of the app. JSON only, so that no
 * other site's form can sign a browser in to someone else's session here. The box signs other JWTs
 * for this app with the same keys, iss and aud: its ID tokens are typ JWT, a logout token is
 * logout+jwt, an access token at+jwt; so the typ is checked, and a logout token (which also carries
 * `events`) never starts the session it was sent to end (Back-Channel Logout 1.0 §4.1, Cross-JWT
 * Confusion).
 */
async function startSession(req, res) {
  if (req.headers['content-type'] !== 'application/json') return answer(res, 415, { error: 'send application/json' });
  const { payload } = await jwtVerify(JSON.parse(await bodyOf(req)).id_token ?? '', boxKeys, {
    issuer: box,
    audience: clientId,
    typ: 'JWT',
  });
  if (payload.events !== undefined) throw new Error('not an ID token: it carries events');
  const id = randomBytes(24).toString('base64url');
  sessions.set(id, { sub: payload.sub, sid: payload.sid });
  answer(res, 201, { sub: payload.sub, sid: payload.sid }, { 'Set-Cookie': `app_session=${id}; Path=/; HttpOnly; SameSite=Lax` });
}

/** OpenID Connect Back-Channel Logout 1.0 §2.6: the logout token validated, then the sessions it names end. */
async function backchannelLogout(req, res) {
  const token = new URLSearchParams(await bodyOf(req)).get('logout_token') ?? '';
  const { payload } = await jwtVerify(token, boxKeys, {
    issuer: box,
    audience: clientId,
    typ: 'logout+jwt',
    requiredClaims: ['iat', 'jti'],
  });
  const event = payload.events?.[LOGOUT_EVENT];
  if (typeof event !== 'object' || event === null) throw new Error('not a logout token: no back-channel logout event');
  if (payload.nonce !== undefined) throw new Error('a logout token has no nonce');
  if (payload.sid === undefined && payload.sub === undefined) throw new Error('a logout token names a sid or a sub');
  if (takenLogouts.has(payload.jti)) throw new Error('this logout token was taken already');
  takenLogouts.set(payload.jti, payload.exp ?? payload.iat + 600);
  for (const [jti, exp] of takenLogouts) if (exp * 1000 < Date.now()) takenLogouts.delete(jti);
  // With a sid, that session of the box only; with only a sub, every session of the person (§2.6).
  for (const [id, s] of sessions) if (payload.sid !== undefined ? s.sid === payload.sid : s.sub === payload.sub) sessions.delete(id);
  res.writeHead(200, { 'Cache-Control': 'no-store' }).end();
}

function serveFile(req, res) {
  const name = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname).replace(/^\/+/, '') || 'index.html';
  const file = path.join(dir, path.normalize(name));
  if (!file.startsWith(dir) || !types[path.extname(file)] || !fs.existsSync(file)) {
    res.writeHead(404).end('not found');
    return;
  }
  res.writeHead(200, { 'Content-Type': types[path.extname(file)], 'Cache-Control': 'no-store' });
  fs.createReadStream(file).pipe(res);
}

const server = http.createServer(async (req, res) => {
  const route = `${req.method} ${new URL(req.url ?? '/', 'http://x').pathname}`;
  try {
    if (route === 'POST /session') return await startSession(req, res);
    if (route === 'GET /session') {
      const session = sessions.get(cookieSession(req));
      return session ? answer(res, 200, session) : answer(res, 401, { signed_in: false });
    }
    // §2.8: "If the logout failed, the RP MUST respond with HTTP 400 Bad Request".
    if (route === 'POST /backchannel-logout')
      return await backchannelLogout(req, res).catch((err) =>
        answer(res, 400, { error: 'invalid_request', error_description: err.message }),
      );
    serveFile(req, res);
  } catch (err) {
    answer(res, 400, { error: err.message });
  }
});
server.listen(port, '127.0.0.1', () =>
  console.log(`example app: http://localhost:${server.address().port}/?box=${encodeURIComponent(box)}`),
);
process.on('SIGTERM', () => server.close(() => process.exit(0)));
