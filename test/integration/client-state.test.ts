// State dies with its client: a client deleted and re-created under the same id
// (by someone else, with another redirect URI) inherits no consent and no code.
import { expect } from 'chai';
import { createHash, randomBytes } from 'node:crypto';
import { Box, basic, boxForSuite, eventually } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';

describe('a deleted client takes its state with it', function () {
  let box: Box;
  let root: string;
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');

  boxForSuite((b, r) => ([box, root] = [b, r]));
  before(async function () {
    const user = await box.json('POST', '/users', { email: 'ann@example.com', password: 'ann-password-1' }, root);
    expect(user.status).to.equal(201);
  });

  const authorizeUrl = (redirectUri: string): string =>
    `/auth/authorize?${new URLSearchParams({
      response_type: 'code',
      client_id: 'gallery',
      redirect_uri: redirectUri,
      state: 'st',
      scope: 'photos',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    })}`;

  async function putClient(redirectUri: string): Promise<void> {
    const res = await box.json(
      'PUT',
      '/Client/gallery',
      { grant_types: ['authorization_code'], auth: { authorization_code: { redirect_uri: redirectUri } } },
      root,
    );
    expect(res.status, res.text).to.be.oneOf([200, 201]);
  }

  it('a re-created client asks for consent again, and an earlier code does not work for it', async function () {
    const honest = 'https://gallery.example/cb';
    await putClient(honest);
    const browser = new FormAgent(box);
    expect((await browser.signIn('ann@example.com', 'ann-password-1')).status).to.equal(303);
    const consentPage = await browser.get(authorizeUrl(honest));
    expect(consentPage.status).to.equal(200);
    expect(consentPage.text).to.include('value="allow"');
    const allowed = await browser.consent(consentPage, 'allow');
    expect(allowed.status).to.equal(302);
    const code = new URL(allowed.headers.get('location')!).searchParams.get('code')!;
    // Consent remembered: the next request goes straight back.
    expect((await browser.get(authorizeUrl(honest))).status).to.equal(302);

    expect((await box.json('DELETE', '/Client/gallery', undefined, root)).status).to.equal(200);
    const attacker = 'https://attacker.example/cb';
    await putClient(attacker);

    const again = await browser.get(authorizeUrl(attacker));
    expect(again.status, "no consent page: the predecessor's consent was inherited").to.equal(200);
    expect(again.text).to.include('value="allow"');
    const exchange = await box.form('/auth/token', {
      grant_type: 'authorization_code',
      client_id: 'gallery',
      code,
      redirect_uri: honest,
      code_verifier: verifier,
    });
    expect(exchange.status).to.equal(400);
    expect(exchange.body.error).to.equal('invalid_grant');
  });

  it("a deleted client's tokens stop at once, and the audit says who closed them", async function () {
    const { secret } = await box.addClient('doomed', { auth: { client_credentials: { refresh_token: true } } });
    const issued = await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('doomed', secret) });
    expect(issued.status, issued.text).to.equal(200);
    // Used once, so the session sits in this process's cache when the client goes.
    expect((await box.json('GET', '/Client/doomed', undefined, issued.body.access_token)).status).to.equal(200);
    const session = await box.form('/auth/introspect', { token: issued.body.access_token }, { Authorization: basic('doomed', secret) });

    expect((await box.json('DELETE', '/Client/doomed', undefined, root)).status).to.equal(200);
    const after = await box.json('GET', '/Session', undefined, issued.body.access_token);
    expect(after.status, "a deleted client's token still works").to.equal(401);
    const refreshed = await box.form('/auth/token', {
      grant_type: 'refresh_token',
      client_id: 'doomed',
      refresh_token: issued.body.refresh_token,
    });
    expect(refreshed.status).to.not.equal(200);

    const closed = await eventually('the close in the audit log', async () =>
      box.logs
        .filter((l) => l.includes('"audit":true') && l.includes('"session_closed"'))
        .map((l) => JSON.parse(l) as { how: string; sessions: string[]; by: { client?: string } })
        .find((e) => e.how === 'client-deleted' && e.sessions.includes(session.body.jti as string)),
    );
    expect(closed.by).to.include({ client: 'root' });
  });
});
