// State dies with its client: a client deleted and re-created under the same id
// (by someone else, with another redirect URI) inherits no consent and no code.
import { expect } from 'chai';
import { createHash, randomBytes } from 'node:crypto';
import { Box, boxForSuite } from '../support/box.js';
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
});
