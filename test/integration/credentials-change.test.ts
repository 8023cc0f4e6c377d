// A new password ends everything the old one obtained (OWASP ASVS 3.3.3): signed-in
// browsers, authorization codes not yet exchanged, device codes a person allowed
// that the device has not picked up, and every grant with its refresh tokens. A
// browser's sign-out ends what was issued through it the same way.
import { expect } from 'chai';
import { Box, basic, eventually } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';

const DEVICE = 'urn:ietf:params:oauth:grant-type:device_code';
const REDIRECT = 'https://app.example/cb';

describe('a credentials change ends what the old credentials obtained', function () {
  let box: Box;
  let root: string;
  let userId: number;
  let password = 'first-password';

  before(async function () {
    box = await Box.start();
    root = await box.rootToken();
    userId = (await box.json('POST', '/users', { email: 'pat@example.com', password }, root)).body.id;
    await box.addClient(
      'app',
      {
        grant_types: ['authorization_code', DEVICE],
        first_party: true,
        auth: { authorization_code: { redirect_uri: REDIRECT, refresh_token: true }, device_code: { refresh_token: true } },
      },
      { secret: 'app-secret-123', policy: false },
    );
  });
  after(async function () {
    await box?.stop();
  });

  const authorizePath = `/auth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'app', redirect_uri: REDIRECT })}`;

  async function signedIn(): Promise<FormAgent> {
    const browser = new FormAgent(box);
    expect((await browser.signIn('pat@example.com', password)).status).to.equal(303);
    return browser;
  }

  /** A code the app has not exchanged yet. */
  async function pendingCode(browser: FormAgent): Promise<string> {
    const res = await browser.get(authorizePath);
    expect(res.status, res.text).to.equal(302);
    return new URL(res.headers.get('location')!).searchParams.get('code')!;
  }

  const exchange = (code: string) =>
    box.form(
      '/auth/token',
      { grant_type: 'authorization_code', code, redirect_uri: REDIRECT },
      { Authorization: basic('app', 'app-secret-123') },
    );

  /** A device code the person allowed, which the device has not polled for yet. */
  async function allowedDeviceCode(browser: FormAgent): Promise<string> {
    const asked = (await box.form('/auth/device', { client_id: 'app' }, { Authorization: basic('app', 'app-secret-123') })).body;
    const page = await browser.get(`/auth/device/verify?user_code=${asked.user_code}`);
    const allowed = await browser.post('/auth/device/verify', { ...hiddenFields(page.text), decision: 'allow' });
    expect(allowed.text).to.include('Device connected');
    return asked.device_code;
  }

  const poll = (deviceCode: string) =>
    box.form('/auth/token', { grant_type: DEVICE, device_code: deviceCode }, { Authorization: basic('app', 'app-secret-123') });

  it('a password change ends pending codes, allowed device codes, grants and signed-in browsers', async function () {
    const browser = await signedIn();
    const granted = (await exchange(await pendingCode(browser))).body;
    expect(granted.refresh_token).to.be.a('string');
    const code = await pendingCode(browser);
    const deviceCode = await allowedDeviceCode(browser);

    const changed = await box.json('PUT', `/users/${userId}`, { password: 'second-password' }, root);
    expect(changed.status, changed.text).to.equal(200);
    password = 'second-password';

    const exchanged = await exchange(code);
    expect(exchanged.status, exchanged.text).to.equal(400);
    expect(exchanged.body.error).to.equal('invalid_grant');
    const polled = await poll(deviceCode);
    expect(polled.status, polled.text).to.equal(400);
    expect(polled.body.error).to.equal('invalid_grant');
    const refreshed = await box.form('/auth/token', {
      grant_type: 'refresh_token',
      client_id: 'app',
      refresh_token: granted.refresh_token,
    });
    expect(refreshed.body.error).to.equal('invalid_grant');
    const introspected = await box.form(
      '/auth/introspect',
      { token: granted.access_token },
      { Authorization: basic('app', 'app-secret-123') },
    );
    expect(introspected.body.active).to.equal(false);
    // The browser must sign in again.
    expect((await browser.get(authorizePath)).status).to.equal(200);
    // The audit says why.
    await eventually('the close in the audit log', async () => box.logs.some((l) => l.includes('"how":"password-change"')));
  });

  it('a sign-out ends the codes and device codes issued through that browser, and only those', async function () {
    const leaving = await signedIn();
    const staying = await signedIn();
    const leavingCode = await pendingCode(leaving);
    const leavingDevice = await allowedDeviceCode(leaving);
    const stayingCode = await pendingCode(staying);

    const page = await leaving.get('/auth/sign-out');
    expect((await leaving.post('/auth/sign-out', hiddenFields(page.text))).status).to.be.oneOf([200, 303]);

    expect((await exchange(leavingCode)).body.error).to.equal('invalid_grant');
    expect((await poll(leavingDevice)).body.error).to.equal('invalid_grant');
    const kept = await exchange(stayingCode);
    expect(kept.status, kept.text).to.equal(200);
  });

  it('deleting a user ends their pending codes and grants before the user goes', async function () {
    const id = (await box.json('POST', '/users', { email: 'gone@example.com', password: 'gone-password' }, root)).body.id;
    const browser = new FormAgent(box);
    await browser.signIn('gone@example.com', 'gone-password');
    const granted = (await exchange(await pendingCode(browser))).body;
    expect((await box.json('DELETE', `/users/${id}`, undefined, root)).status).to.equal(200);
    const introspected = await box.form(
      '/auth/introspect',
      { token: granted.access_token },
      { Authorization: basic('app', 'app-secret-123') },
    );
    expect(introspected.body.active).to.equal(false);
    // The audit shares the access log's buffered writer (flushed every 100 ms): wait for the line.
    await eventually('the close in the audit log', async () => box.logs.some((l) => l.includes('"how":"user-deleted"')));
  });

  it('sign-ins racing a password change: none made with the old password outlives the change', async function () {
    const email = 'racer@example.com';
    const id = (await box.json('POST', '/users', { email, password: 'racer-password-1' }, root)).body.id;
    // Many sign-ins with the old password, the change in their midst: a sign-in that checked the
    // old password before the change committed must not record its session after it.
    const browsers = Array.from({ length: 24 }, () => new FormAgent(box));
    const pages = await Promise.all(browsers.map((b) => b.get('/auth/sign-in')));
    const signIns = browsers.map((b, i) =>
      b.post('/auth/sign-in', { ...hiddenFields(pages[i]!.text), email, password: 'racer-password-1' }),
    );
    const change = box.json('PUT', `/users/${id}`, { email, password: 'racer-password-2' }, root);
    const answers = await Promise.all(signIns);
    expect((await change).status).to.equal(200);
    expect(
      answers.every((a) => [303, 401, 429].includes(a.status)),
      answers.map((a) => a.status).join(),
    ).to.equal(true);
    for (const browser of browsers) {
      const page = await browser.get('/auth/signed-in');
      expect(page.text, 'a browser is still signed in with the old password').not.to.include('You are signed in as');
    }
  });
});
