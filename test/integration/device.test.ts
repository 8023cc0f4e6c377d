// The device authorization grant (RFC 8628): a device asks, a person allows it on
// the box's page, the device's polling gets the tokens. (Chromium approves one in
// test/e2e/kube-login.test.ts, as a person would.)
import { expect } from 'chai';
import { decodeJwt } from 'jose';
import { Box } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';

const DEVICE = 'urn:ietf:params:oauth:grant-type:device_code';

describe('device authorization grant', function () {
  this.timeout(60_000);
  let box: Box;

  before(async function () {
    box = await Box.start({ movableClock: true }); // the polling interval is passed by moving its clock, not by waiting
    const root = await box.rootToken();
    await box.json('POST', '/users', { email: 'dev@example.com', password: 'dev-password-1' }, root);
    const client = await box.json(
      'PUT',
      '/Client/kubectl',
      {
        grant_types: [DEVICE],
        description: 'kubectl on your machine',
        scope: ['openid', 'email', 'groups'],
        claims_in_id_token: true,
        auth: { device_code: { refresh_token: true, id_token_expiration: 300 } },
      },
      root,
    );
    expect(client.status, client.text).to.equal(201);
    await box.json('PUT', '/Client/no-device', { grant_types: ['client_credentials'], secret: 'secret-123' }, root);
  });
  after(async function () {
    await box?.stop();
  });

  const ask = (params: Record<string, string> = {}) => box.form('/auth/device', { client_id: 'kubectl', scope: 'openid email', ...params });
  const poll = (deviceCode: string) => box.form('/auth/token', { grant_type: DEVICE, client_id: 'kubectl', device_code: deviceCode });

  async function signedInBrowser(): Promise<FormAgent> {
    const browser = new FormAgent(box);
    expect((await browser.signIn('dev@example.com', 'dev-password-1')).status).to.equal(303);
    return browser;
  }

  it('the device gets a user code to show and a place to send its person', async function () {
    const res = await ask();
    expect(res.status, res.text).to.equal(200);
    expect(res.body).to.include({ verification_uri: `${box.url}/auth/device/verify`, expires_in: 600, interval: 5 });
    expect(res.body.user_code).to.match(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    expect(res.body.verification_uri_complete).to.equal(`${box.url}/auth/device/verify?user_code=${res.body.user_code}`);
    expect(res.body.device_code).to.be.a('string').with.length.above(40);
  });

  it('polling says authorization_pending, then slow_down when too fast; a person allows; the next poll gets the tokens', async function () {
    const { body: asked } = await ask();
    expect((await poll(asked.device_code)).body.error).to.equal('authorization_pending');
    expect((await poll(asked.device_code)).body.error).to.equal('slow_down');
    const browser = await signedInBrowser();
    const page = await browser.get(new URL(asked.verification_uri_complete).pathname + new URL(asked.verification_uri_complete).search);
    expect(page.status).to.equal(200);
    expect(page.text).to.include(asked.user_code);
    expect(page.text).to.include('kubectl on your machine');
    const allowed = await browser.post('/auth/device/verify', { ...hiddenFields(page.text), decision: 'allow' });
    expect(allowed.text).to.include('Device connected');
    box.advanceClock(10); // the interval, after one slow_down
    const tokens = await poll(asked.device_code);
    expect(tokens.status, tokens.text).to.equal(200);
    expect(tokens.body.refresh_token).to.be.a('string');
    expect(decodeJwt(tokens.body.id_token)).to.include({ email: 'dev@example.com', aud: 'kubectl', iss: box.url });
    const userinfo = await box.request('GET', '/auth/userinfo', { headers: { Authorization: `Bearer ${tokens.body.access_token}` } });
    expect(userinfo.body.email).to.equal('dev@example.com');
    // Used once.
    expect((await poll(asked.device_code)).body.error).to.equal('invalid_grant');
    // And the refresh token brings a new ID token.
    const refreshed = await box.form('/auth/token', {
      grant_type: 'refresh_token',
      client_id: 'kubectl',
      refresh_token: tokens.body.refresh_token,
    });
    expect(decodeJwt(refreshed.body.id_token).email).to.equal('dev@example.com');
  });

  it('a person who denies: access_denied; a wrong code: the page says so, and guessing is throttled', async function () {
    const { body: asked } = await ask();
    const browser = await signedInBrowser();
    const typed = await browser.get(`/auth/device/verify?user_code=${asked.user_code.toLowerCase().replace('-', ' ')}`);
    expect(typed.text).to.include(asked.user_code); // case, spaces and dashes do not matter
    await browser.post('/auth/device/verify', { ...hiddenFields(typed.text), decision: 'deny' });
    expect((await poll(asked.device_code)).body.error).to.equal('access_denied');
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await browser.get(`/auth/device/verify?user_code=BBBB-BBB${'BCDFGHJ'[i]}`)).status);
    expect(statuses.every((s) => s === 400)).to.equal(true);
    expect((await browser.get('/auth/device/verify?user_code=BBBB-BBBK')).text).to.include('Too many wrong codes');
  });

  it('guessing through the form is throttled as on the page: after too many wrong codes, not even the right one is decided', async function () {
    await box.json('POST', '/users', { email: 'guesser@example.com', password: 'guesser-password-1' }, await box.rootToken());
    const guesser = new FormAgent(box);
    expect((await guesser.signIn('guesser@example.com', 'guesser-password-1')).status).to.equal(303);
    const { body: own } = await ask();
    const form = hiddenFields((await guesser.get(`/auth/device/verify?user_code=${own.user_code}`)).text); // a CSRF token of their own
    const { body: victim } = await ask();
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      statuses.push((await guesser.post('/auth/device/verify', { ...form, user_code: `CCCC-CCC${'BCDFG'[i]}`, decision: 'deny' })).status);
    }
    expect(statuses.every((s) => s === 400)).to.equal(true);
    const hit = await guesser.post('/auth/device/verify', { ...form, user_code: victim.user_code, decision: 'deny' });
    expect(hit.status).to.equal(400);
    expect(hit.text).to.include('Too many wrong codes');
    expect((await poll(victim.device_code)).body.error).to.equal('authorization_pending');
  });

  it('the page asks a stranger to sign in first; a client without the grant is refused', async function () {
    const stranger = await new FormAgent(box).get('/auth/device/verify?user_code=ABCD-EFGH');
    expect(stranger.status).to.equal(303);
    expect(stranger.headers.get('location')).to.equal(
      `/auth/sign-in?return_to=${encodeURIComponent('/auth/device/verify?user_code=ABCD-EFGH')}`,
    );
    const refused = await box.form('/auth/device', { client_id: 'no-device', client_secret: 'secret-123' });
    expect(refused.body.error).to.equal('unauthorized_client');
    const unknown = await box.form('/auth/token', { grant_type: DEVICE, client_id: 'kubectl', device_code: 'nope' });
    expect(unknown.body.error).to.equal('invalid_grant');
  });

  describe('a stranger asking for device codes without end', function () {
    let limited: Box;
    before(async function () {
      limited = await Box.start({ env: { BOXAUTH_DEVICE_CODES_PER_ADDRESS: '3' } });
      const root = await limited.rootToken();
      await limited.json('PUT', '/Client/kubectl', { grant_types: [DEVICE] }, root);
    });
    after(async function () {
      await limited?.stop();
    });

    it('gets BOXAUTH_DEVICE_CODES_PER_ADDRESS codes (no secret needed), then 429 with Retry-After and no code', async function () {
      const asked = await Promise.all(Array.from({ length: 6 }, () => limited.form('/auth/device', { client_id: 'kubectl' })));
      const codes = asked.filter((r) => r.status === 200);
      expect(codes, 'codes issued').to.have.length(3);
      for (const r of asked.filter((r) => r.status !== 200)) {
        expect(r.status, r.text).to.equal(429);
        expect(r.body.error).to.equal('too_many_requests');
        expect(r.body.error_description).to.match(/^too many device codes from this address; try again in \d+ s$/);
        expect(Number(r.headers.get('retry-after'))).to.be.within(1, 600);
        expect(r.body).to.not.have.property('device_code');
      }
      // The codes it did get still work.
      const poll = await limited.form('/auth/token', { grant_type: DEVICE, client_id: 'kubectl', device_code: codes[0]!.body.device_code });
      expect(poll.body.error).to.equal('authorization_pending');
    });
  });
});
