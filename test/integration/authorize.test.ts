// GET /auth/authorize without a browser: which errors are pages and which go back
// to the client (RFC 6749 §4.1.2.1 / §4.2.2.1).
import { expect } from 'chai';
import { Box, basic } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';

describe('authorize endpoint', function () {
  let box: Box;
  const cb = 'https://app.example/cb';

  before(async function () {
    box = await Box.start();
    const root = await box.rootToken();
    await box.json(
      'PUT',
      '/Client/spa',
      {
        grant_types: ['implicit', 'authorization_code'],
        auth: { implicit: { redirect_uri: cb }, authorization_code: { redirect_uri: cb } },
      },
      root,
    );
    await box.json(
      'PUT',
      '/Client/code-only',
      { grant_types: ['authorization_code'], auth: { authorization_code: { redirect_uri: cb } } },
      root,
    );
    await box.json(
      'PUT',
      '/Client/web',
      { grant_types: ['authorization_code'], secret: 'web-secret-1', auth: { authorization_code: { redirect_uri: cb } } },
      root,
    );
    // A registered resource (RFC 8707), with a query: the audience of an App.
    await box.json('PUT', '/App/api', { urls: ['https://api.example'], audience: 'https://api.example/v1?tenant=7' }, root);
  });
  after(async function () {
    await box?.stop();
  });

  const authorize = (query: Record<string, string>) => box.request('GET', `/auth/authorize?${new URLSearchParams(query)}`);

  it('not signed in: the sign-in page, with a CSRF token and the way back', async function () {
    const res = await authorize({ response_type: 'token', client_id: 'spa', state: 's1' });
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/text\/html/);
    expect(res.text).to.match(/<input type="hidden" name="csrf" value="[A-Za-z0-9_-]{43}">/);
    expect(res.text).to.include('name="return_to" value="/auth/authorize?response_type=token&amp;client_id=spa&amp;state=s1"');
    expect(res.headers.get('set-cookie')).to.match(/boxauth_csrf=.*HttpOnly; SameSite=Lax/);
  });

  it('errors after the redirect URI is trusted go back to the client, with the state', async function () {
    const unsupported = await authorize({ response_type: 'code id_token', client_id: 'spa', redirect_uri: cb, state: 'st' }); // hybrid: not served
    expect(unsupported.status).to.equal(302);
    const loc = new URL(unsupported.headers.get('location')!);
    expect(loc.origin + loc.pathname).to.equal(cb);
    expect(loc.searchParams.get('error')).to.equal('unsupported_response_type');
    expect(loc.searchParams.get('state')).to.equal('st');

    // cb is a redirect URI code-only registered, so the refusal can go there.
    const notAllowed = await authorize({ response_type: 'token', client_id: 'code-only', redirect_uri: cb, state: 'st' });
    expect(notAllowed.status).to.equal(302);
    expect(new URLSearchParams(new URL(notAllowed.headers.get('location')!).hash.slice(1)).get('error')).to.equal('unauthorized_client');
    const unregistered = await authorize({ response_type: 'token', client_id: 'code-only', redirect_uri: 'https://elsewhere.example/cb' });
    expect(unregistered.status).to.equal(400);
    const implicitErr = await box.request('GET', `/auth/authorize?response_type=token&client_id=spa&state=z&code_challenge_method=S256`);
    expect(implicitErr.status).to.equal(200); // extra PKCE parameters are ignored by the implicit flow
  });

  it('a client without a secret must use PKCE (S256 only)', async function () {
    const noPkce = await authorize({ response_type: 'code', client_id: 'spa', state: 'p' });
    const loc = new URL(noPkce.headers.get('location')!);
    expect(loc.searchParams.get('error')).to.equal('invalid_request');
    expect(loc.searchParams.get('error_description')).to.match(/PKCE/);
    const plain = await authorize({
      response_type: 'code',
      client_id: 'spa',
      code_challenge: 'x'.repeat(43),
      code_challenge_method: 'plain',
    });
    expect(new URL(plain.headers.get('location')!).searchParams.get('error')).to.equal('invalid_request');
    const confidential = await authorize({ response_type: 'code', client_id: 'web', state: 'c' });
    expect(confidential.status).to.equal(200); // a confidential client may go without PKCE
  });

  it('a resource that is not an absolute URI, or has a fragment: invalid_target back to the client (RFC 8707 §2)', async function () {
    for (const resource of ['api', '/api', 'https://api.example/#section']) {
      const res = await authorize({ response_type: 'code', client_id: 'web', redirect_uri: cb, state: 'r1', resource });
      expect(res.status, `${resource}: ${res.text.slice(0, 200)}`).to.equal(302);
      const loc = new URL(res.headers.get('location')!);
      expect(loc.origin + loc.pathname).to.equal(cb);
      expect(loc.searchParams.get('error'), resource).to.equal('invalid_target');
      expect(loc.searchParams.get('error_description')).to.match(/resource must/);
      expect(loc.searchParams.get('state')).to.equal('r1');
    }
    // Until the redirect URI is trusted, nothing is redirected: the page, as for any other error.
    const untrusted = await authorize({
      response_type: 'code',
      client_id: 'web',
      redirect_uri: 'https://elsewhere.example/cb',
      resource: 'api',
    });
    expect([untrusted.status, untrusted.headers.get('location')]).to.deep.equal([400, null]);
    // An absolute URI, with a query too (RFC 8707: "SHOULD NOT", not "MUST NOT"), registered: the sign-in page.
    const fine = await authorize({
      response_type: 'code',
      client_id: 'web',
      redirect_uri: cb,
      resource: 'https://api.example/v1?tenant=7',
    });
    expect(fine.status).to.equal(200);
  });

  it('implicit errors travel in the fragment', async function () {
    const res = await authorize({ response_type: 'token', client_id: 'spa', redirect_uri: cb, state: 'f', scope: 'a' });
    expect(res.status).to.equal(200); // the sign-in page
    const box2 = await box.json(
      'PUT',
      '/Client/spa',
      { grant_types: ['authorization_code'], auth: { implicit: { redirect_uri: cb }, authorization_code: { redirect_uri: cb } } },
      await box.rootToken(),
    );
    expect(box2.status).to.equal(200);
    const refused = await authorize({ response_type: 'token', client_id: 'spa', redirect_uri: cb, state: 'f' });
    const loc = new URL(refused.headers.get('location')!);
    expect(loc.search).to.equal('');
    expect(new URLSearchParams(loc.hash.slice(1)).get('error')).to.equal('unauthorized_client');
  });

  describe('several redirect URIs per grant (redirect_uris)', function () {
    const staging = 'https://staging.app.example/cb';
    const production = 'https://app.example/callback';
    const challenge = { code_challenge: 'c'.repeat(43), code_challenge_method: 'S256' };
    const signInPage = (res: { status: number; text: string }): boolean => res.status === 200 && res.text.includes('name="return_to"');

    before(async function () {
      const put = await box.json(
        'PUT',
        '/Client/multi',
        {
          grant_types: ['authorization_code', 'implicit'],
          auth: { authorization_code: { redirect_uris: [staging, production] }, implicit: { redirect_uri: cb, redirect_uris: [staging] } },
        },
        await box.rootToken(),
      );
      expect(put.status, put.text).to.equal(201);
      expect(put.body.auth.authorization_code.redirect_uris).to.deep.equal([staging, production]);
    });

    it('each listed URI is accepted exactly; another, or none named when several are listed, is a page that redirects nowhere', async function () {
      for (const uri of [staging, production]) {
        expect(signInPage(await authorize({ response_type: 'code', client_id: 'multi', redirect_uri: uri, ...challenge })), uri).to.equal(
          true,
        );
      }
      for (const uri of ['https://evil.example/callback', `${production}/x`, `${staging}?x=1`]) {
        const refused = await authorize({ response_type: 'code', client_id: 'multi', redirect_uri: uri, ...challenge });
        expect(refused.status, uri).to.equal(400);
        expect(refused.headers.get('location'), uri).to.equal(null);
      }
      const unnamed = await authorize({ response_type: 'code', client_id: 'multi', ...challenge });
      expect(unnamed.status, 'RFC 6749 §3.1.2.3: with several registered, the request must name one').to.equal(400);
      expect(unnamed.headers.get('location')).to.equal(null);
    });

    it('redirect_uri and redirect_uris together: both forms count, for the grant they are under', async function () {
      expect(signInPage(await authorize({ response_type: 'token', client_id: 'multi', redirect_uri: cb }))).to.equal(true);
      expect(signInPage(await authorize({ response_type: 'token', client_id: 'multi', redirect_uri: staging }))).to.equal(true);
      const other = await authorize({ response_type: 'token', client_id: 'multi', redirect_uri: production }); // the code grant's only
      expect(other.status).to.equal(400);
    });

    it('a bad list is refused with 422 naming the field; a grant with neither form too', async function () {
      const root = await box.rootToken();
      const bad = await box.json(
        'PUT',
        '/Client/multi-bad',
        { grant_types: ['authorization_code'], auth: { authorization_code: { redirect_uris: [production, 'not a uri'] } } },
        root,
      );
      expect(bad.status).to.equal(422);
      expect(bad.body.errors).to.have.property('auth.authorization_code.redirect_uris.1');
      const empty = await box.json(
        'PUT',
        '/Client/multi-bad',
        { grant_types: ['authorization_code'], auth: { authorization_code: { redirect_uris: [] } } },
        root,
      );
      expect(empty.status).to.equal(422);
      const neither = await box.json(
        'PUT',
        '/Client/multi-bad',
        { grant_types: ['authorization_code'], auth: { authorization_code: {} } },
        root,
      );
      expect(neither.status).to.equal(422);
      expect(neither.body.errors['auth.authorization_code.redirect_uri']).to.deep.equal(['is required (or redirect_uris, a list)']);
      expect((await box.json('GET', '/Client/multi-bad', undefined, root)).status).to.equal(404);
    });
  });

  it('a repeated parameter is an error page', async function () {
    const res = await box.request('GET', '/auth/authorize?response_type=token&client_id=spa&client_id=web');
    expect(res.status).to.equal(400);
    expect(res.text).to.include('more than once');
  });

  it('the code grant refuses unknown codes, and a confidential client must authenticate', async function () {
    const unknown = await box.form('/auth/token', {
      grant_type: 'authorization_code',
      code: 'nope',
      redirect_uri: cb,
      client_id: 'code-only',
      code_verifier: 'v'.repeat(43),
    });
    expect(unknown.status).to.equal(400);
    expect(unknown.body.error).to.equal('invalid_grant');
    // With client_id alone and a code that is not its own, a confidential client is
    // answered as any other id is (test/integration/enumeration.test.ts)...
    const noSecret = await box.form('/auth/token', { grant_type: 'authorization_code', code: 'nope', redirect_uri: cb, client_id: 'web' });
    expect(noSecret.status).to.equal(400);
    expect(noSecret.body).to.deep.equal(unknown.body);
    const withSecret = await box.form(
      '/auth/token',
      { grant_type: 'authorization_code', code: 'nope', redirect_uri: cb },
      { Authorization: basic('web', 'web-secret-1') },
    );
    expect(withSecret.body.error).to.equal('invalid_grant');
    // ...while with a code of its own it is told to authenticate, and the code stays good.
    const root = await box.rootToken();
    expect((await box.json('POST', '/users', { email: 'web-user@example.com', password: 'web-password-1' }, root)).status).to.equal(201);
    const browser = new FormAgent(box);
    expect((await browser.signIn('web-user@example.com', 'web-password-1')).status).to.equal(303);
    const consent = await browser.get(
      `/auth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'web', redirect_uri: cb })}`,
    );
    const code = new URL((await browser.consent(consent, 'allow')).headers.get('location')!).searchParams.get('code')!;
    const unauthenticated = await box.form('/auth/token', { grant_type: 'authorization_code', code, redirect_uri: cb, client_id: 'web' });
    expect(unauthenticated.status).to.equal(401);
    expect(unauthenticated.body.error).to.equal('invalid_client');
    const exchanged = await box.form(
      '/auth/token',
      { grant_type: 'authorization_code', code, redirect_uri: cb },
      { Authorization: basic('web', 'web-secret-1') },
    );
    expect(exchanged.status, exchanged.text).to.equal(200);
  });

  it('answers CORS preflights so browser apps can call the token endpoint and the API', async function () {
    const res = await box.request('OPTIONS', '/auth/token', {
      headers: { Origin: 'https://app.example', 'Access-Control-Request-Method': 'POST' },
    });
    expect(res.status).to.equal(204);
    expect(res.headers.get('access-control-allow-origin')).to.equal('*');
    expect(res.headers.get('access-control-allow-credentials')).to.equal(null);
  });
});
