// HTTPS when asked: BOXAUTH_TLS_CERT_FILE / BOXAUTH_TLS_KEY_FILE, the base URL
// https, and a certificate replaced in place served without a restart.
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import tls from 'node:tls';
import { projectPath } from '../../api/paths.js';
import { Box, basic, eventually } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { presentedName, testCa, type TestCa } from '../support/tls.js';

describe('HTTPS', function () {
  this.timeout(60_000);
  let ca: TestCa;
  let box: Box;
  let files: { certFile: string; keyFile: string };

  before(async function () {
    ca = testCa();
    files = ca.issue('served', '/CN=first');
    box = await Box.start({ tls: { ...files, dispatcher: ca.dispatcher } });
  });
  after(async function () {
    await box?.stop();
  });

  it('serves HTTPS, and its base URL (the issuer) is https', async function () {
    expect(box.url).to.match(/^https:/);
    const discovery = await box.request('GET', '/.well-known/openid-configuration');
    expect(discovery.status).to.equal(200);
    expect(discovery.body.issuer).to.equal(box.url);
    expect(await presentedName(box.port, ca.pem)).to.equal('first');
    const plain = await fetch(`http://127.0.0.1:${box.port}/healthz`).then(
      (r) => r.status,
      () => 'refused',
    );
    expect(plain).to.not.equal(200);
  });

  it('marks its cookies Secure', async function () {
    const page = await box.request('GET', '/auth/sign-in');
    expect(page.headers.getSetCookie().join('\n')).to.match(/boxauth_csrf=.*; Secure/);
  });

  it('sends Strict-Transport-Security on every answer (RFC 6797): one year, not for subdomains', async function () {
    const answers = {
      health: await box.request('GET', '/healthz'),
      discovery: await box.request('GET', '/.well-known/openid-configuration'),
      'no such endpoint': await box.request('GET', '/no-such-endpoint'),
      'the API without a token': await box.request('GET', '/Client'),
      'a page': await box.request('GET', '/auth/sign-in'),
      'the admin UI': await box.request('GET', '/admin'),
      'a token': await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('root', box.rootSecret) }),
      'a token refused': await box.form('/auth/token', { grant_type: 'client_credentials' }),
      'a preflight': await box.request('OPTIONS', '/auth/token', {
        headers: { 'Access-Control-Request-Method': 'POST', Origin: 'https://app.example' },
      }),
    };
    for (const [what, res] of Object.entries(answers))
      expect(res.headers.get('strict-transport-security'), what).to.equal('max-age=31536000');
  });

  it('names its cookies __Host- (Secure, Path=/, no Domain), and sign-in, consent, the admin UI, device verification and logout read them', async function () {
    const root = await box.rootToken();
    const cb = 'https://app.example/cb';
    const made = [
      await box.json('POST', '/users', { email: 'tls@example.com', password: 'tls-password-1' }, root),
      await box.json(
        'PUT',
        '/Client/web',
        { grant_types: ['authorization_code'], secret: 'web-secret-1', auth: { authorization_code: { redirect_uri: cb } } },
        root,
      ),
      await box.json('PUT', '/Client/tv', { grant_types: ['urn:ietf:params:oauth:grant-type:device_code'], description: 'a TV' }, root),
    ];
    for (const res of made) expect(res.status, res.text).to.equal(201);
    const cookies = (res: { headers: Headers }, name: string): string[] =>
      res.headers.getSetCookie().filter((c) => c.startsWith(`${name}=`));

    const browser = new FormAgent(box);
    const page = await browser.get('/auth/sign-in');
    expect(cookies(page, 'boxauth_csrf')).to.deep.equal([]);
    expect(cookies(page, '__Host-boxauth_csrf')).to.have.length(1);
    expect(cookies(page, '__Host-boxauth_csrf')[0]).to.match(
      /^__Host-boxauth_csrf=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Secure$/,
    );
    const signedIn = await browser.post('/auth/sign-in', {
      ...hiddenFields(page.text),
      email: 'tls@example.com',
      password: 'tls-password-1',
    });
    expect(signedIn.status, signedIn.text).to.equal(303);
    const [session] = cookies(signedIn, '__Host-boxauth_session');
    expect(session).to.match(/^__Host-boxauth_session=[A-Za-z0-9_-]+; Path=\/; HttpOnly; SameSite=Lax; Secure; Max-Age=\d+$/);
    expect((await browser.get('/auth/signed-in')).text).to.include('signed in as tls@example.com');
    // The device cookie that counts this browser's asks apart from strangers' (docs/security.md): as the session's, and HMAC'd.
    expect(cookies(signedIn, '__Host-boxauth_device')[0]).to.match(
      /^__Host-boxauth_device=\d+\.\d+\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Secure; Max-Age=\d+$/,
    );
    // The unprefixed name, which a page of another subdomain or over plain HTTP could set, signs nobody in.
    const token = session!.split(';')[0]!.split('=')[1]!;
    const tossed = await box.request('GET', '/auth/signed-in', { headers: { Cookie: `boxauth_session=${token}` } });
    expect(tossed.text).not.to.include('signed in as');

    const consent = await browser.get(
      `/auth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'web', redirect_uri: cb, state: 's' })}`,
    );
    expect(consent.text).to.include('value="allow"');
    const allowed = await browser.consent(consent, 'allow');
    expect(allowed.status, allowed.text).to.equal(302);
    expect(new URL(allowed.headers.get('location')!).searchParams.get('code')).to.be.a('string');

    const verifier = 'v'.repeat(43);
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const callback = `${box.url}/admin/callback`;
    const admin = await browser.get(
      `/auth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'boxauth-admin', redirect_uri: callback, code_challenge: challenge, code_challenge_method: 'S256', state: 'a' })}`,
    );
    expect(admin.status, admin.text).to.equal(302);
    expect(admin.headers.get('location')).to.match(new RegExp(`^${callback}\\?code=`));

    const asked = await box.form('/auth/device', { client_id: 'tv' });
    expect(asked.status, asked.text).to.equal(200);
    const verify = await browser.get(`/auth/device/verify?user_code=${asked.body.user_code}`);
    const connected = await browser.post('/auth/device/verify', { ...hiddenFields(verify.text), decision: 'allow' });
    expect(connected.text).to.include('Device connected');

    const logout = await browser.get('/auth/logout');
    const out = await browser.post('/auth/logout', hiddenFields(logout.text));
    expect(out.text).to.include('You are signed out');
    expect(cookies(out, '__Host-boxauth_session')).to.have.length(1);
    expect(cookies(out, '__Host-boxauth_session')[0]).to.match(
      /^__Host-boxauth_session=; Path=\/; HttpOnly; SameSite=Lax; Secure; Max-Age=0$/,
    );
    expect((await browser.get('/auth/signed-in')).text).not.to.include('signed in as');
  });

  it('serves a certificate renewed in place, without a restart; files that do not load leave the last good pair', async function () {
    const pid = box.process!.pid;
    const renewed = ca.issue('renewed', '/CN=second');
    // As Kubernetes updates a mounted Secret: new files moved into place.
    fs.copyFileSync(renewed.keyFile, `${files.keyFile}.new`);
    fs.copyFileSync(renewed.certFile, `${files.certFile}.new`);
    fs.renameSync(`${files.keyFile}.new`, files.keyFile);
    fs.renameSync(`${files.certFile}.new`, files.certFile);
    await eventually('the renewed certificate', async () => (await presentedName(box.port, ca.pem)) === 'second', 10_000);
    expect(box.process!.pid).to.equal(pid);
    fs.writeFileSync(files.certFile, 'not a certificate');
    await eventually('the warning', async () => box.logs.some((l) => l.includes('do not load')), 10_000);
    expect(await presentedName(box.port, ca.pem)).to.equal('second');
    expect((await box.request('GET', '/healthz')).status).to.equal(200);
  });

  // Placed after the renewal: a reloaded certificate keeps the policy (setSecureContext replaces the context whole).
  it('TLS 1.2 with only the cipher suites of BCP 195 (FAPI 2.0 §5.2.1): a client offering only others is refused', async function () {
    /** The suite a TLS 1.2 client offering only `ciphers` ends up with, or the handshake's error. */
    const negotiated = (ciphers: string): Promise<string> =>
      new Promise((resolve) => {
        const socket = tls.connect(
          { host: '127.0.0.1', port: box.port, ca: ca.pem, servername: 'localhost', maxVersion: 'TLSv1.2', ciphers },
          () => {
            resolve(socket.getCipher().standardName);
            socket.end();
          },
        );
        socket.on('error', (err) => resolve(`refused: ${err.message}`));
      });
    expect(await negotiated('ECDHE-ECDSA-AES128-GCM-SHA256')).to.equal('TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256');
    expect(await negotiated('ECDHE-ECDSA-AES256-GCM-SHA384')).to.equal('TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384');
    // CBC with SHA-256 or SHA-1, and ChaCha20 in TLS 1.2: none is among BCP 195's (RFC 9325 §4.2).
    for (const other of ['ECDHE-ECDSA-AES128-SHA256', 'ECDHE-ECDSA-AES256-SHA', 'ECDHE-ECDSA-CHACHA20-POLY1305'])
      expect(await negotiated(other), other).to.match(/^refused: .*handshake failure/);
  });

  it('refuses to start with half a pair, naming what is missing', function () {
    const run = spawnSync(process.execPath, [projectPath('dist', 'api', 'main.js')], {
      env: { PATH: process.env.PATH, BOXAUTH_TLS_CERT_FILE: files.certFile },
      encoding: 'utf8',
    });
    expect(run.status).to.equal(2);
    expect(run.stderr).to.include('BOXAUTH_TLS_CERT_FILE and BOXAUTH_TLS_KEY_FILE go together');
  });
});

describe('cookie names and Strict-Transport-Security follow the base URL', function () {
  this.timeout(60_000);
  const boxes: Box[] = [];
  after(async function () {
    await Promise.all(boxes.map((b) => b.stop()));
  });

  const signInPage = async (env: Record<string, string>) => {
    const box = await Box.start({ env });
    boxes.push(box);
    return box.request('GET', '/auth/sign-in');
  };

  it('https under a path (a proxy in front): Secure cookies without __Host-, scoped to its pages, and HSTS as configured', async function () {
    const page = await signInPage({
      BOXAUTH_BASE_URL: 'https://auth.example/box',
      BOXAUTH_HSTS_MAX_AGE: '600',
      BOXAUTH_HSTS_INCLUDE_SUBDOMAINS: 'true',
    });
    expect(page.headers.getSetCookie()).to.have.length(1);
    expect(page.headers.getSetCookie()[0]).to.match(/^boxauth_csrf=[A-Za-z0-9_-]{43}; Path=\/box\/auth; HttpOnly; SameSite=Lax; Secure$/);
    expect(page.headers.get('strict-transport-security')).to.equal('max-age=600; includeSubDomains');
  });

  it('plain http: the names of old, not Secure, scoped to /auth, and no HSTS', async function () {
    const page = await signInPage({});
    expect(page.headers.getSetCookie()).to.have.length(1);
    expect(page.headers.getSetCookie()[0]).to.match(/^boxauth_csrf=[A-Za-z0-9_-]{43}; Path=\/auth; HttpOnly; SameSite=Lax$/);
    expect(page.headers.get('strict-transport-security')).to.equal(null);
  });

  it('plain http: an app on another port of the host is not sent the session; sign-in and sign-out work, and end a cookie of before', async function () {
    const box = await Box.start({ env: { BOXAUTH_ADMIN_EMAIL: 'ann@example.com', BOXAUTH_ADMIN_PASSWORD: 'ann-password-1' } });
    boxes.push(box);
    const browser = new FormAgent(box);
    const signedIn = await browser.signIn('ann@example.com', 'ann-password-1');
    expect(signedIn.status, signedIn.text).to.equal(303);
    // The session cookie is the box's pages' only (cookies ignore ports: Path=/ would reach every server of 127.0.0.1).
    const set = signedIn.headers.getSetCookie();
    expect(set).to.include('boxauth_session=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0');
    const session = set.find((c) => /^boxauth_session=[^;]/.test(c));
    expect(session).to.match(/^boxauth_session=[A-Za-z0-9_-]+; Path=\/auth; HttpOnly; SameSite=Lax; Max-Age=\d+$/);
    expect((await browser.get('/auth/signed-in')).text).to.include('ann@example.com');
    // A session cookie a browser kept from before (Path=/) is ended with the scoped one at sign-out.
    const page = await browser.get('/auth/sign-out');
    const out = await browser.post('/auth/sign-out', hiddenFields(page.text));
    expect(out.headers.getSetCookie()).to.include.members([
      'boxauth_session=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0',
      'boxauth_session=; Path=/auth; HttpOnly; SameSite=Lax; Max-Age=0',
    ]);
    expect((await browser.get('/auth/signed-in')).text).not.to.include('ann@example.com');
  });
});
