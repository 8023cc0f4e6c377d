// The device page holds a person to what an app's code would: a group that requires a second
// factor, or the device client's minimum_acr, is not met by a password-only sign-in, and no
// device is connected through one — not by the page, not by its form sent straight.
import { expect } from 'chai';
import { createPool, type Pool } from '../../api/db/pool.js';
import { Box } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';

const DEVICE = 'urn:ietf:params:oauth:grant-type:device_code';

describe('the device page and second factors', function () {
  this.timeout(60_000);
  let box: Box;
  let pool: Pool;
  let root: string;

  before(async function () {
    box = await Box.start();
    pool = createPool(box.databaseUrl!, 2);
    root = await box.rootToken();
    const group = await box.json('POST', '/groups', { name: 'operators' }, root);
    expect(group.status, group.text).to.equal(201);
    await box.json('POST', '/users', { email: 'grouped@example.com', password: 'device-password-1', 'group-ids': [group.body.id] }, root);
    await box.json('POST', '/users', { email: 'plain@example.com', password: 'device-password-1' }, root);
    const clients = {
      kubectl: { grant_types: [DEVICE], scope: ['openid'] },
      strict: { grant_types: [DEVICE], scope: ['openid'], minimum_acr: 'urn:boxauth:acr:mfa' },
    };
    for (const [id, client] of Object.entries(clients)) {
      const res = await box.json('PUT', `/Client/${id}`, client, root);
      expect(res.status, res.text).to.equal(201);
    }
  });
  after(async function () {
    await pool?.end();
    await box?.stop();
  });

  async function deviceCode(client: string): Promise<{ user_code: string; device_code: string }> {
    const res = await box.form('/auth/device', { client_id: client, scope: 'openid' });
    expect(res.status, res.text).to.equal(200);
    return res.body;
  }
  const poll = (client: string, code: string) => box.form('/auth/token', { grant_type: DEVICE, client_id: client, device_code: code });

  async function signedIn(email: string): Promise<FormAgent> {
    const browser = new FormAgent(box);
    expect((await browser.signIn(email, 'device-password-1')).status).to.equal(303);
    return browser;
  }

  it('a member of a group that requires a second factor, signed in before the rule, is sent to enrol; the form sent straight connects nothing', async function () {
    // The session is made before the rule holds for them, as a session of a person whose group changed later would be.
    await pool.query('UPDATE groups SET require_second_factor = false');
    const browser = await signedIn('grouped@example.com');
    await pool.query('UPDATE groups SET require_second_factor = true');
    const code = await deviceCode('kubectl');

    const page = await browser.get(`/auth/device/verify?user_code=${code.user_code}`);
    expect(page.status).to.equal(303);
    expect(page.headers.get('location')).to.match(/^\/auth\/sign-in\/enrol\?/);

    // The consent form of the page, as a page shown before the rule would have sent it.
    const form = await browser.get('/auth/device/verify');
    const csrf = hiddenFields(form.text).csrf ?? (await csrfOf(browser));
    const sent = await browser.post('/auth/device/verify', { csrf, user_code: code.user_code, decision: 'allow' });
    expect(sent.status).to.equal(303);
    expect((await poll('kubectl', code.device_code)).body.error).to.equal('authorization_pending');
  });

  it("a client's minimum_acr holds on the device page too; a client without one connects as before", async function () {
    const browser = await signedIn('plain@example.com');
    const strict = await deviceCode('strict');
    const page = await browser.get(`/auth/device/verify?user_code=${strict.user_code}`);
    expect(page.status).to.equal(303);
    expect(page.headers.get('location')).to.match(/^\/auth\/sign-in\/enrol\?/);

    const plain = await deviceCode('kubectl');
    const consent = await browser.get(`/auth/device/verify?user_code=${plain.user_code}`);
    expect(consent.status, consent.text).to.equal(200);
    const fields = hiddenFields(consent.text);
    const sent = await browser.post('/auth/device/verify', { ...fields, decision: 'allow' });
    expect(sent.status, sent.text).to.equal(200);
    const tokens = await poll('kubectl', plain.device_code);
    expect(tokens.status, tokens.text).to.equal(200);
  });

  /** A CSRF token of this browser, from a page that carries one. */
  async function csrfOf(browser: FormAgent): Promise<string> {
    return hiddenFields((await browser.get('/auth/sign-out')).text).csrf!;
  }
});
