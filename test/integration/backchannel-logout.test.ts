// OpenID Connect Back-Channel Logout 1.0 on real parts: a box process, relying parties that took
// part in a person's browser session, and a node:http receiver that verifies every logout token
// with jose against the box's published keys, as a relying party would (§2.6). Every way a
// session ends — sign-out, RP-initiated logout, an admin's close, the account page, a password
// reset by mail, a reset of factors, the person turned off by REST or SCIM, deleted — tells
// exactly the relying parties that took part, once per browser session, and nobody else; and the
// example app (examples/browser-app/serve.mjs) really ends its own session on the token.
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash, randomBytes } from 'node:crypto';
import { createRemoteJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify, type JWTPayload } from 'jose';
import { Box, basic, eventually, sleep, type JsonResponse } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { TestSmtp, type ReceivedMail } from '../support/smtp.js';
import { startExampleApp, type ExampleApp } from '../support/browser.js';

const CALLBACK = 'https://rp.example/callback';
const SECRET = 'rp-secret-123';
const PASSWORD = 'a-long-password-1';
const LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';
const DEVICE = 'urn:ietf:params:oauth:grant-type:device_code';
const CODE_FLOW = { authorization_code: { redirect_uri: CALLBACK, refresh_token: true } };
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

/** The reset link of a received mail, as a path of the box. */
function resetLinkIn(mail: ReceivedMail): string {
  const found = /https?:\/\/[^\s"<>]+(\/auth\/reset\/confirm\?token=[A-Za-z0-9_-]+)/.exec(mail.parsed.text ?? '');
  expect(found, `a reset link in: ${mail.parsed.text}`).to.not.equal(null);
  return found![1]!;
}

interface Received {
  /** The receiver's path: the client it plays. */
  client: string;
  token: string;
  claims: JWTPayload;
  contentType: string | undefined;
}

/** Relying parties' back-channel logout endpoints, each at /<client id>, verifying as §2.6 asks. */
class LogoutReceiver {
  private constructor(
    private readonly server: http.Server,
    readonly url: string,
    readonly received: Received[],
    readonly refused: Array<{ client: string; problem: string }>,
  ) {}

  static async start(box: Box): Promise<LogoutReceiver> {
    const keys = createRemoteJWKSet(new URL(`${box.url}/.well-known/jwks.json`));
    const received: Received[] = [];
    const refused: Array<{ client: string; problem: string }> = [];
    const server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const client = (req.url ?? '/').slice(1);
        const token = new URLSearchParams(body).get('logout_token') ?? '';
        verifyLogoutToken(token, keys, box.url, client).then(
          (claims) => {
            received.push({ client, token, claims, contentType: req.headers['content-type'] });
            res.writeHead(200, { 'Cache-Control': 'no-store' }).end();
          },
          (err: Error) => {
            refused.push({ client, problem: err.message });
            res.writeHead(400).end();
          },
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return new LogoutReceiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received, refused);
  }

  /** The tokens `client` took about person `sub`. */
  about(sub: string, client?: string): Received[] {
    return this.received.filter((r) => r.claims.sub === sub && (client === undefined || r.client === client));
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** §2.6 steps 3-9, as a relying party of `client` checks a logout token. */
async function verifyLogoutToken(
  token: string,
  keys: ReturnType<typeof createRemoteJWKSet>,
  issuer: string,
  client: string,
): Promise<JWTPayload> {
  const { payload } = await jwtVerify(token, keys, { issuer, audience: client, typ: 'logout+jwt', requiredClaims: ['iat', 'jti'] });
  const events = payload.events as Record<string, unknown> | undefined;
  if (typeof events?.[LOGOUT_EVENT] !== 'object') throw new Error('no back-channel logout event');
  if (payload.nonce !== undefined) throw new Error('a nonce in a logout token');
  if (payload.sid === undefined && payload.sub === undefined) throw new Error('neither sid nor sub');
  return payload;
}

describe('back-channel logout: each close tells the relying parties that took part', function () {
  this.timeout(180_000);
  let box: Box;
  let root: string;
  let smtp: TestSmtp;
  let receiver: LogoutReceiver;
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');

  before(async function () {
    smtp = await TestSmtp.start();
    // The receivers listen on loopback over http: the box must be told it may send there.
    // People are named by their row id here, as a box that had people before release 036 names them (subjects.test.ts: the others).
    box = await Box.start({
      env: { ...smtp.boxEnv(), BOXAUTH_NOTICE_ALLOWED_ADDRESSES: '127.0.0.1/32', BOXAUTH_PUBLIC_SUBJECTS: 'sequential' },
    });
    root = await box.rootToken();
    receiver = await LogoutReceiver.start(box);
    const everyflow = await box.json(
      'PUT',
      '/Client/everyflow',
      {
        grant_types: ['authorization_code', 'refresh_token', 'implicit', DEVICE],
        secret: SECRET,
        first_party: true,
        auth: { ...CODE_FLOW, implicit: { redirect_uri: CALLBACK }, device_code: {} },
      },
      root,
    );
    expect(everyflow.status, everyflow.text).to.equal(201);
    const clients: Record<string, Record<string, unknown>> = {
      // Told of sessions and of the person alone.
      rp: { backchannel_logout_uri: `${receiver.url}/rp` },
      // Wants a sid in every token, and ES256 ID tokens: its logout tokens are ES256 too (§2.4).
      strict: {
        backchannel_logout_uri: `${receiver.url}/strict`,
        backchannel_logout_session_required: true,
        id_token_signed_response_alg: 'ES256',
      },
      // Takes part, but registered no URI: told nothing.
      quiet: {},
      // Has a URI, but never takes part: told nothing.
      bystander: { backchannel_logout_uri: `${receiver.url}/bystander` },
      // Given a sub of its own (OpenID Connect Core §8.1): its logout tokens say that one.
      pairwise: { backchannel_logout_uri: `${receiver.url}/pairwise`, subject_type: 'pairwise' },
    };
    for (const [id, extra] of Object.entries(clients)) {
      const res = await box.json(
        'PUT',
        `/Client/${id}`,
        { grant_types: ['authorization_code', 'refresh_token'], secret: SECRET, first_party: true, auth: CODE_FLOW, ...extra },
        root,
      );
      expect(res.status, res.text).to.equal(201);
    }
  });
  after(async function () {
    await receiver?.stop();
    await box?.stop();
    await smtp?.stop();
  });

  let n = 0;
  /** A new person (so that each test reads only its own tokens), their id as `sub`. */
  async function person(): Promise<{ email: string; sub: string }> {
    const email = `bcl-${++n}-${randomBytes(3).toString('hex')}@example.com`;
    const res = await box.json('POST', '/users', { email, password: PASSWORD }, root);
    expect(res.status, res.text).to.equal(201);
    return { email, sub: String(res.body.id) };
  }

  const authorizePath = (client: string): string =>
    `/auth/authorize?${new URLSearchParams({
      response_type: 'code',
      client_id: client,
      redirect_uri: CALLBACK,
      scope: 'openid email',
      state: 's',
      nonce: randomBytes(8).toString('hex'),
      code_challenge: challenge,
      code_challenge_method: 'S256',
    })}`;

  /** `client`'s tokens for the person signed in to `browser`. */
  async function tokensOf(browser: FormAgent, client: string): Promise<{ id_token: string; refresh_token: string; access_token: string }> {
    const answer = await browser.get(authorizePath(client));
    const code = new URL(answer.headers.get('location')!).searchParams.get('code')!;
    const res = await box.form(
      '/auth/token',
      { grant_type: 'authorization_code', code, redirect_uri: CALLBACK, code_verifier: verifier },
      { Authorization: basic(client, SECRET) },
    );
    expect(res.status, res.text).to.equal(200);
    return res.body;
  }

  /** A browser of the person signed in, with rp, strict and quiet each holding tokens of it; its sid. */
  async function takingPart(email: string): Promise<{ browser: FormAgent; sid: string; idToken: string }> {
    const browser = new FormAgent(box);
    expect((await browser.signIn(email, PASSWORD)).status).to.equal(303);
    const { id_token } = await tokensOf(browser, 'rp');
    await tokensOf(browser, 'strict');
    await tokensOf(browser, 'quiet');
    return { browser, sid: decodeJwt(id_token).sid as string, idToken: id_token };
  }

  /**
   * Waits for `count` tokens about `sub` at each of rp and strict, then a moment more, and checks
   * that no more came, that nobody else got one, and that none was refused.
   */
  async function toldOnce(sub: string, sids: string[]): Promise<Received[]> {
    await eventually(
      'the logout tokens',
      async () => receiver.about(sub, 'rp').length >= sids.length && receiver.about(sub, 'strict').length >= sids.length,
      20_000,
    );
    await sleep(1500); // a duplicate would come within this
    for (const client of ['rp', 'strict']) {
      expect(
        receiver
          .about(sub, client)
          .map((r) => r.claims.sid)
          .sort(),
        client,
      ).to.deep.equal([...sids].sort());
    }
    expect(receiver.about(sub, 'bystander'), 'a client that took no part').to.deep.equal([]);
    expect(receiver.about(sub, 'quiet'), 'a client without a URI').to.deep.equal([]);
    expect(receiver.refused).to.deep.equal([]);
    return receiver.about(sub);
  }

  it('a sign-out at the box: one verified token per client, with its sid and sub (§2.4)', async function () {
    const { email, sub } = await person();
    const { browser, sid } = await takingPart(email);
    const page = await browser.get('/auth/sign-out');
    expect((await browser.post('/auth/sign-out', hiddenFields(page.text))).status).to.be.oneOf([200, 303]);
    const received = await toldOnce(sub, [sid]);
    for (const r of received) {
      expect(r.contentType).to.equal('application/x-www-form-urlencoded');
      const header = decodeProtectedHeader(r.token);
      expect(header.typ).to.equal('logout+jwt');
      expect(header.alg).to.equal(r.client === 'strict' ? 'ES256' : 'RS256');
      expect(r.claims).to.include({ iss: box.url, aud: r.client, sub, sid });
      expect(r.claims.exp! - r.claims.iat!).to.be.at.most(120);
      expect(Math.abs(r.claims.iat! - Date.now() / 1000)).to.be.below(30);
      expect(r.claims.jti).to.be.a('string');
      expect(r.claims.events).to.deep.equal({ [LOGOUT_EVENT]: {} });
      expect(r.claims).not.to.have.property('nonce');
    }
    expect(new Set(received.map((r) => r.claims.jti)).size).to.equal(received.length);
  });

  it('a logout token replayed to another client fails its verification (aud)', async function () {
    const { email, sub } = await person();
    const { browser } = await takingPart(email);
    const page = await browser.get('/auth/sign-out');
    await browser.post('/auth/sign-out', hiddenFields(page.text));
    const [toRp] = await eventually('a token at rp', async () => receiver.about(sub, 'rp').length > 0 && receiver.about(sub, 'rp'));
    const keys = createRemoteJWKSet(new URL(`${box.url}/.well-known/jwks.json`));
    let problem = '';
    await verifyLogoutToken(toRp!.token, keys, box.url, 'strict').catch((err: Error) => (problem = err.message));
    expect(problem).to.match(/aud/);
    // Nor is it an access token or an ID token of the box (its typ).
    expect((await box.request('GET', '/auth/userinfo', { headers: { Authorization: `Bearer ${toRp!.token}` } })).status).to.equal(401);
  });

  it('RP-initiated logout (with an id_token_hint): the asking client is told too', async function () {
    const { email, sub } = await person();
    const { browser, sid, idToken } = await takingPart(email);
    const res = await browser.get(`/auth/logout?${new URLSearchParams({ id_token_hint: idToken })}`);
    expect(res.status).to.equal(200);
    await toldOnce(sub, [sid]);
  });

  it("an admin's close of one browser session tells about that one only; two browsers, two sids", async function () {
    const { email, sub } = await person();
    const first = await takingPart(email);
    const second = await takingPart(email);
    expect((await box.json('DELETE', `/users/${sub}/sessions/${first.sid}`, undefined, root)).status).to.be.oneOf([200, 204]);
    await toldOnce(sub, [first.sid]);
    expect((await box.json('DELETE', `/users/${sub}/sessions`, undefined, root)).status).to.be.oneOf([200, 204]);
    await toldOnce(sub, [first.sid, second.sid]);
  });

  it('the account page: a person signs out another browser of theirs', async function () {
    const { email, sub } = await person();
    const other = await takingPart(email);
    const here = new FormAgent(box);
    expect((await here.signIn(email, PASSWORD)).status).to.equal(303);
    const page = await here.get('/auth/account');
    const end = await here.post('/auth/account/sign-ins/end', { ...hiddenFields(page.text), sid: other.sid });
    expect(end.status, end.text.slice(0, 300)).to.be.oneOf([200, 303]);
    await toldOnce(sub, [other.sid]);
  });

  it('a password reset by mailed link', async function () {
    const { email, sub } = await person();
    const { sid } = await takingPart(email);
    const browser = new FormAgent(box);
    const ask = await browser.get('/auth/reset');
    await browser.post('/auth/reset', { ...hiddenFields(ask.text), email });
    const mail = await smtp.waitForMail((m) => m.to.includes(email) && /^Reset your password/.test(m.parsed.subject ?? ''));
    const page = await browser.get(resetLinkIn(mail));
    const set = await browser.post('/auth/reset/confirm', { ...hiddenFields(page.text), password: 'another-long-password-2' });
    expect(set.status, set.text.slice(0, 300)).to.be.oneOf([200, 303]);
    await toldOnce(sub, [sid]);
  });

  it("an administrator's reset of the person's factors", async function () {
    const { email, sub } = await person();
    const { sid } = await takingPart(email);
    const res = await box.json('POST', `/users/${sub}/factors/reset`, undefined, root);
    expect(res.status, res.text).to.be.oneOf([200, 204]);
    await toldOnce(sub, [sid]);
  });

  it('the person turned off through REST', async function () {
    const { email, sub } = await person();
    const { sid } = await takingPart(email);
    const user = (await box.json('GET', `/users/${sub}`, undefined, root)).body;
    const res = await box.json('PUT', `/users/${sub}`, { ...user, active: false }, root);
    expect(res.status, res.text).to.equal(200);
    await toldOnce(sub, [sid]);
  });

  it('the person turned off through SCIM', async function () {
    const { email, sub } = await person();
    const { sid } = await takingPart(email);
    const res = await box.request('PATCH', `/scim/v2/Users/${sub}`, {
      headers: { Authorization: `Bearer ${root}`, 'Content-Type': 'application/scim+json' },
      body: JSON.stringify({ schemas: [PATCH], Operations: [{ op: 'replace', path: 'active', value: false }] }),
    });
    expect(res.status, res.text).to.equal(200);
    await toldOnce(sub, [sid]);
  });

  it('the person deleted', async function () {
    const { email, sub } = await person();
    const { sid } = await takingPart(email);
    expect((await box.json('DELETE', `/users/${sub}`, undefined, root)).status).to.be.oneOf([200, 204]);
    await toldOnce(sub, [sid]);
  });

  it('a pairwise client is told the sub its ID tokens said, even once the person is deleted', async function () {
    const { email, sub: id } = await person();
    const { browser, sid } = await takingPart(email);
    const pairwise = decodeJwt((await tokensOf(browser, 'pairwise')).id_token).sub!;
    expect(pairwise).to.not.equal(id);
    expect((await box.json('DELETE', `/users/${id}`, undefined, root)).status).to.be.oneOf([200, 204]);
    await toldOnce(id, [sid]);
    const [told] = await eventually('its logout token', async () => {
      const about = receiver.about(pairwise, 'pairwise');
      return about.length > 0 && about;
    });
    expect(told!.claims).to.include({ aud: 'pairwise', sub: pairwise, sid });
  });

  it("a client's own revocation tells it nothing, and tells no one of a session it did not share", async function () {
    const { email, sub } = await person();
    const browser = new FormAgent(box);
    expect((await browser.signIn(email, PASSWORD)).status).to.equal(303);
    const { refresh_token } = await tokensOf(browser, 'rp');
    const res = await box.form('/auth/revoke', { token: refresh_token }, { Authorization: basic('rp', SECRET) });
    expect(res.status).to.equal(200);
    await sleep(1500);
    expect(receiver.about(sub)).to.deep.equal([]);
  });

  it('a backchannel_logout_uri is checked when written: an http(s) URL, no fragment, never the box', async function () {
    const write = (uri: string): Promise<JsonResponse> =>
      box.json(
        'PUT',
        '/Client/checked',
        { grant_types: ['authorization_code'], secret: SECRET, auth: CODE_FLOW, backchannel_logout_uri: uri },
        root,
      );
    for (const [uri, problem] of [
      ['https://127.0.0.1:8443/bcl#here', /backchannel_logout_uri/],
      ['ftp://127.0.0.1/bcl', /backchannel_logout_uri/],
      [`${box.url}/auth/logout`, /the box itself/],
    ] as const) {
      const res = await write(uri);
      expect(res.status, `${uri}: ${res.text}`).to.equal(422);
      expect(JSON.stringify(res.body.errors), uri).to.match(problem);
    }
    // Its addresses are judged at each send (notices.test.ts: never posts to an address the box
    // does not allow), so a Client applied before its relying party's Service exists is written.
    for (const uri of ['https://169.254.169.254/latest', 'https://no-such-host.invalid/bcl']) {
      expect((await write(uri)).status, uri).to.be.oneOf([200, 201]);
    }
    await box.json('DELETE', '/Client/checked', undefined, root);
    // Loopback over http, because this box's settings allow it (BOXAUTH_NOTICE_ALLOWED_ADDRESSES).
    expect((await write(`${receiver.url}/checked`)).status).to.equal(201);
  });

  it('every ID token from a browser session carries its sid: the code flow, a refresh, the implicit flow, the device flow', async function () {
    const { email } = await person();
    const browser = new FormAgent(box);
    expect((await browser.signIn(email, PASSWORD)).status).to.equal(303);
    const first = await tokensOf(browser, 'everyflow');
    const expected = decodeJwt(first.id_token).sid;
    expect(expected, 'code').to.be.a('string');
    const refreshed = await box.form(
      '/auth/token',
      { grant_type: 'refresh_token', refresh_token: first.refresh_token },
      { Authorization: basic('everyflow', SECRET) },
    );
    expect(refreshed.status, refreshed.text).to.equal(200);
    expect(decodeJwt(refreshed.body.id_token).sid, 'refresh').to.equal(expected);
    const implicit = await browser.get(
      `/auth/authorize?${new URLSearchParams({ response_type: 'id_token token', client_id: 'everyflow', redirect_uri: CALLBACK, scope: 'openid', state: 's', nonce: 'n' })}`,
    );
    const fragment = new URLSearchParams(new URL(implicit.headers.get('location')!).hash.slice(1));
    expect(decodeJwt(fragment.get('id_token')!).sid, 'implicit').to.equal(expected);
    const asked = (await box.form('/auth/device', { client_id: 'everyflow', client_secret: SECRET, scope: 'openid' })).body;
    const page = await browser.get(`/auth/device/verify?user_code=${asked.user_code}`);
    await browser.post('/auth/device/verify', { ...hiddenFields(page.text), decision: 'allow' });
    const device = await box.form(
      '/auth/token',
      { grant_type: DEVICE, device_code: asked.device_code },
      { Authorization: basic('everyflow', SECRET) },
    );
    expect(device.status, device.text).to.equal(200);
    expect(decodeJwt(device.body.id_token).sid, 'device').to.equal(expected);
  });

  describe('the example app', function () {
    let app: ExampleApp;
    before(async function () {
      app = await startExampleApp({ BOX_URL: box.url, CLIENT_ID: 'example-app' });
      const res = await box.json(
        'PUT',
        '/Client/example-app',
        {
          grant_types: ['authorization_code'],
          first_party: true,
          auth: { authorization_code: { redirect_uri: `${app.url}/callback.html` } },
          backchannel_logout_uri: `${app.url}/backchannel-logout`,
        },
        root,
      );
      expect(res.status, res.text).to.equal(201);
    });
    after(async function () {
      await app?.stop();
    });

    /** What the page does: the code exchanged at the box, its ID token handed to the app's server, the cookie kept. */
    async function appSession(browser: FormAgent): Promise<string> {
      const answer = await browser.get(
        `/auth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'example-app', redirect_uri: `${app.url}/callback.html`, scope: 'openid', state: 's', nonce: 'n', code_challenge: challenge, code_challenge_method: 'S256' })}`,
      );
      const code = new URL(answer.headers.get('location')!).searchParams.get('code')!;
      const tokens = await box.form('/auth/token', {
        grant_type: 'authorization_code',
        code,
        redirect_uri: `${app.url}/callback.html`,
        client_id: 'example-app',
        code_verifier: verifier,
      });
      expect(tokens.status, tokens.text).to.equal(200);
      const made = await fetch(`${app.url}/session`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ id_token: tokens.body.id_token }),
      });
      expect(made.status, await made.clone().text()).to.equal(201);
      return made.headers.get('set-cookie')!.split(';')[0]!;
    }
    const sessionStatus = async (cookie: string): Promise<number> => (await fetch(`${app.url}/session`, { headers: { cookie } })).status;

    it("ends its own session on the box's logout token, and only the session of that browser", async function () {
      const { email } = await person();
      const leaving = new FormAgent(box);
      expect((await leaving.signIn(email, PASSWORD)).status).to.equal(303);
      const staying = new FormAgent(box);
      expect((await staying.signIn(email, PASSWORD)).status).to.equal(303);
      const gone = await appSession(leaving);
      const kept = await appSession(staying);
      expect(await sessionStatus(gone)).to.equal(200);
      const page = await leaving.get('/auth/sign-out');
      await leaving.post('/auth/sign-out', hiddenFields(page.text));
      await eventually('the app session ended', async () => (await sessionStatus(gone)) === 401, 20_000);
      expect(await sessionStatus(kept)).to.equal(200);
    });

    /** A person signed in at rp (and others) and signed out: rp's ID token, and the logout token rp was sent. */
    async function signedOutAtRp(): Promise<{ toRp: Received; idToken: string }> {
      const { email, sub } = await person();
      const { browser, idToken } = await takingPart(email);
      const page = await browser.get('/auth/sign-out');
      await browser.post('/auth/sign-out', hiddenFields(page.text));
      const [toRp] = await eventually('a token at rp', async () => receiver.about(sub, 'rp').length > 0 && receiver.about(sub, 'rp'));
      return { toRp: toRp!, idToken };
    }

    it('refuses a logout token of another client, and one that is no logout token', async function () {
      const { toRp, idToken } = await signedOutAtRp();
      const post = (token: string): Promise<Response> =>
        fetch(`${app.url}/backchannel-logout`, { method: 'POST', body: new URLSearchParams({ logout_token: token }) });
      expect((await post(toRp.token)).status, "rp's token at the example app").to.equal(400);
      expect((await post(idToken)).status, 'an ID token').to.equal(400);
      expect((await post('')).status).to.equal(400);
    });

    it('starts no session of a logout token sent to it: its signature, iss and aud are those of an ID token, not its typ', async function () {
      const { toRp, idToken } = await signedOutAtRp();
      // The example app as rp's: the logout token rp was sent is for it (aud rp), signed by the box.
      const rpApp = await startExampleApp({ BOX_URL: box.url, CLIENT_ID: 'rp' });
      try {
        const start = (token: string): Promise<Response> =>
          fetch(`${rpApp.url}/session`, {
            method: 'POST',
            headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify({ id_token: token }),
          });
        const taken = await start(toRp.token);
        expect(taken.status, await taken.text()).to.equal(400);
        expect(taken.headers.get('set-cookie')).to.equal(null);
        expect((await start(idToken)).status, "rp's ID token").to.equal(201);
      } finally {
        await rpApp.stop();
      }
    });
  });
});
