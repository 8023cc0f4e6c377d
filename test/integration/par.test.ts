// Pushed authorization requests (RFC 9126) with a real client library
// (oauth4webapi pushes and exchanges the code) and a browser without JavaScript
// (FormAgent) between the two: the happy path through sign-in and consent, every
// error of the PAR endpoint, and the authorization endpoint as an attacker
// tries a request_uri — unknown, expired, reused, of another client, in another
// browser, many times at once — and a client that must push sending a plain request.
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import * as oauth from 'oauth4webapi';
import { Box, basic, type JsonResponse } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';

const CALLBACK = 'https://rp.example/callback';
const OTHER_CALLBACK = 'https://rp.example/other';
const ANN = { email: 'ann@example.com', password: 'ann-password-1' };
const SECRET = 'rp-secret-123';
const insecure = { [oauth.allowInsecureRequests]: true };

describe('pushed authorization requests (RFC 9126)', function () {
  this.timeout(60_000);
  let box: Box;
  let root: string;
  let as: oauth.AuthorizationServer;

  before(async function () {
    // Expiry by moving the box's clock, not by waiting; few failed client authentications before 429,
    // and room for the many sign-ins of the tests.
    box = await Box.start({
      movableClock: true,
      env: { BOXAUTH_CLIENT_AUTH_MAX_FAILURES: '3', BOXAUTH_SIGN_IN_MAX_FAILURES: '1000' },
    });
    root = await box.rootToken();
    expect((await box.json('POST', '/users', ANN, root)).status).to.equal(201);
    // A registered resource (RFC 8707): the audience of an App.
    expect(
      (await box.json('PUT', '/App/api', { urls: ['https://api.example'], audience: 'https://api.example/v1' }, root)).status,
    ).to.equal(201);
    const code = { authorization_code: { redirect_uris: [CALLBACK, OTHER_CALLBACK] } };
    for (const [id, client] of Object.entries({
      web: { first_party: true, secret: SECRET, auth: code },
      other: { first_party: true, secret: SECRET, auth: code },
      asks: { secret: SECRET, auth: code, scope: ['email', 'profile'] },
      strict: { first_party: true, secret: SECRET, auth: code, require_pushed_authorization_requests: true },
      spa: { first_party: true, auth: code },
      throttled: { first_party: true, secret: SECRET, auth: code },
      unlisted: { first_party: true, secret: SECRET, auth: code, grant_types: ['client_credentials'] },
    })) {
      const res = await box.json('PUT', `/Client/${id}`, { grant_types: ['authorization_code'], ...client }, root);
      expect(res.status, res.text).to.equal(201);
    }
    const issuer = new URL(box.url);
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }));
  });
  after(async function () {
    await box?.stop();
  });

  interface Pushed {
    requestUri: string;
    expiresIn: number;
    verifier: string;
    state: string;
  }

  /** A pushed request of `clientId` (by oauth4webapi), with PKCE and a state of its own. */
  async function push(clientId: string, extra: Record<string, string> = {}, auth = oauth.ClientSecretBasic(SECRET)): Promise<Pushed> {
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const response = await oauth.pushedAuthorizationRequest(
      as,
      { client_id: clientId },
      auth,
      {
        response_type: 'code',
        redirect_uri: CALLBACK,
        scope: 'email',
        state,
        code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        ...extra,
      },
      insecure,
    );
    const { request_uri, expires_in } = await oauth.processPushedAuthorizationResponse(as, { client_id: clientId }, response);
    return { requestUri: request_uri, expiresIn: expires_in, verifier, state };
  }

  /** The push as a plain HTTP request, for answers a library would not send. */
  const pushRaw = (params: Record<string, string>, headers: Record<string, string> = { Authorization: basic('web', SECRET) }) =>
    box.form(
      '/auth/par',
      { response_type: 'code', redirect_uri: CALLBACK, code_challenge: challenge(), code_challenge_method: 'S256', ...params },
      headers,
    );
  const challenge = (): string => randomBytes(32).toString('base64url').slice(0, 43);

  const authorizePath = (clientId: string, requestUri: string, extra: Record<string, string> = {}): string =>
    `/auth/authorize?${new URLSearchParams({ client_id: clientId, request_uri: requestUri, ...extra })}`;

  async function signedInBrowser(): Promise<FormAgent> {
    const browser = new FormAgent(box);
    expect((await browser.signIn(ANN.email, ANN.password)).status).to.equal(303);
    return browser;
  }

  const location = (res: JsonResponse): URL => {
    expect(res.status, `${res.status} ${res.text.slice(0, 300)}`).to.equal(302);
    return new URL(res.headers.get('location')!);
  };
  const codeOf = (res: JsonResponse): string | null => (res.status === 302 ? location(res).searchParams.get('code') : null);
  const isInvalidLinkPage = (res: JsonResponse): boolean =>
    res.status === 400 && res.headers.get('location') === null && res.text.includes('has expired, was used already');

  /** The client's side: the answer checked and its code exchanged (oauth4webapi). */
  async function exchange(answer: JsonResponse, pushed: Pushed, clientId = 'web', auth = oauth.ClientSecretBasic(SECRET)) {
    const client = { client_id: clientId };
    const params = oauth.validateAuthResponse(as, client, location(answer), pushed.state);
    const response = await oauth.authorizationCodeGrantRequest(as, client, auth, params, CALLBACK, pushed.verifier, insecure);
    return oauth.processAuthorizationCodeResponse(as, client, response);
  }

  describe('discovery and the Client field', function () {
    it('the metadata names the PAR endpoint (RFC 9126 §5)', function () {
      expect(as.pushed_authorization_request_endpoint).to.equal(`${box.url}/auth/par`);
      expect(as.require_pushed_authorization_requests).to.equal(false);
    });

    it('the OpenID Connect discovery document says the same', async function () {
      const openid = (await box.json('GET', '/.well-known/openid-configuration')).body;
      expect(openid.pushed_authorization_request_endpoint).to.equal(`${box.url}/auth/par`);
    });

    it('a Client stores require_pushed_authorization_requests, and only as a boolean', async function () {
      expect((await box.json('GET', '/Client/strict', undefined, root)).body.require_pushed_authorization_requests).to.equal(true);
      const bad = await box.json(
        'PUT',
        '/Client/bad',
        { grant_types: ['authorization_code'], require_pushed_authorization_requests: 'yes' },
        root,
      );
      expect(bad.status).to.equal(422);
      expect(bad.text).to.include('require_pushed_authorization_requests');
    });
  });

  describe('the flow with a real client', function () {
    it('push, sign in, come back: the code is exchanged by oauth4webapi', async function () {
      const pushed = await push('web');
      expect(pushed.requestUri).to.match(/^urn:ietf:params:oauth:request_uri:[\w-]{43}$/);
      expect(pushed.expiresIn).to.equal(60);
      const browser = new FormAgent(box);
      const signInPage = await browser.get(authorizePath('web', pushed.requestUri));
      expect(signInPage.status).to.equal(200);
      // The way back names the pushed request, not its parameters.
      const returnTo = hiddenFields(signInPage.text).return_to!;
      expect(Object.fromEntries(new URLSearchParams(returnTo.split('?')[1]))).to.deep.equal({
        client_id: 'web',
        request_uri: pushed.requestUri,
      });
      const signedIn = await browser.post('/auth/sign-in', { ...hiddenFields(signInPage.text), ...ANN });
      expect(signedIn.status).to.equal(303);
      const answer = await browser.get(signedIn.headers.get('location')!.replace(box.url, ''));
      expect(location(answer).origin + location(answer).pathname).to.equal(CALLBACK);
      const tokens = await exchange(answer, pushed);
      expect(tokens.access_token).to.be.a('string');
      expect(tokens.scope).to.equal('email');
    });

    it('a public client pushes with client_id alone, and PKCE', async function () {
      const pushed = await push('spa', {}, oauth.None());
      const answer = await (await signedInBrowser()).get(authorizePath('spa', pushed.requestUri));
      expect((await exchange(answer, pushed, 'spa', oauth.None())).access_token).to.be.a('string');
    });

    it('through the consent page; what the form or the query adds does not change the pushed request', async function () {
      const pushed = await push('asks');
      const browser = await signedInBrowser();
      // RFC 9101 §5: only the pushed parameters count, whatever the query says.
      const consent = await browser.get(
        authorizePath('asks', pushed.requestUri, { redirect_uri: OTHER_CALLBACK, scope: 'email profile', state: 'forged' }),
      );
      expect(consent.status).to.equal(200);
      expect(hiddenFields(consent.text)).to.include({ client_id: 'asks', request_uri: pushed.requestUri });
      const answer = await browser.post('/auth/consent', {
        ...hiddenFields(consent.text),
        redirect_uri: OTHER_CALLBACK,
        scope: 'email profile',
        decision: 'allow',
      });
      expect(`${location(answer).origin}${location(answer).pathname}`).to.equal(CALLBACK);
      expect(location(answer).searchParams.get('state')).to.equal(pushed.state);
      const tokens = await exchange(answer, pushed, 'asks');
      expect(tokens.scope).to.equal('email');
    });

    it('a denial ends the pushed request too', async function () {
      const pushed = await push('asks', { scope: 'profile' }); // not consented to before: the consent page
      const browser = await signedInBrowser();
      const consent = await browser.get(authorizePath('asks', pushed.requestUri));
      const denied = await browser.consent(consent, 'deny');
      expect(location(denied).searchParams.get('error')).to.equal('access_denied');
      expect(isInvalidLinkPage(await browser.get(authorizePath('asks', pushed.requestUri)))).to.equal(true);
    });

    it('a reload before the answer is the same request (RFC 9126 §4 allows it)', async function () {
      const pushed = await push('web');
      const browser = new FormAgent(box);
      expect((await browser.get(authorizePath('web', pushed.requestUri))).status).to.equal(200);
      expect((await browser.get(authorizePath('web', pushed.requestUri))).status).to.equal(200);
    });
  });

  describe('errors of the PAR endpoint (RFC 9126 §2.3)', function () {
    it('a confidential client without its secret, or with a wrong one: 401 invalid_client', async function () {
      const named = await pushRaw({ client_id: 'web' }, {});
      expect(named.status).to.equal(401);
      expect(named.body.error).to.equal('invalid_client');
      const wrong = await pushRaw({ client_id: 'web' }, { Authorization: basic('web', 'wrong-secret') });
      expect(wrong.status).to.equal(401);
      expect(wrong.body.error).to.equal('invalid_client');
      expect(wrong.headers.get('www-authenticate')).to.match(/^Basic/);
    });

    it('request_uri in the push: 400 invalid_request', async function () {
      const res = await pushRaw({ client_id: 'web', request_uri: 'urn:ietf:params:oauth:request_uri:abc' });
      expect(res.status).to.equal(400);
      expect(res.body.error).to.equal('invalid_request');
      expect(res.body.error_description).to.include('request_uri');
    });

    it('what /auth/authorize would refuse comes back to the client here', async function () {
      const cases: [Record<string, string>, string][] = [
        [{ redirect_uri: 'https://evil.example/callback' }, 'invalid_request'],
        [{ redirect_uri: `${CALLBACK}/` }, 'invalid_request'],
        [{ response_type: 'bogus' }, 'unsupported_response_type'],
        [{ code_challenge_method: 'plain' }, 'invalid_request'],
        [{ code_challenge: 'short' }, 'invalid_request'],
        [{ prompt: 'sometimes' }, 'invalid_request'],
        [{ request: 'eyJhbGciOiJub25lIn0.e30.' }, 'invalid_request_object'],
      ];
      for (const [params, error] of cases) {
        const res = await pushRaw({ client_id: 'web', ...params });
        expect(res.status, JSON.stringify(params)).to.equal(400);
        expect(res.body.error, JSON.stringify(params)).to.equal(error);
        expect(res.headers.get('location')).to.equal(null);
      }
      const scope = await pushRaw({ client_id: 'asks', scope: 'admin' }, { Authorization: basic('asks', SECRET) });
      expect([scope.status, scope.body.error]).to.deep.equal([400, 'invalid_scope']);
      const noPkce = await box.form('/auth/par', { client_id: 'spa', response_type: 'code', redirect_uri: CALLBACK });
      expect([noPkce.status, noPkce.body.error]).to.deep.equal([400, 'invalid_request']);
    });

    it('a grant its grant_types does not list: one answer at PAR, /auth/authorize, /auth/token and /auth/device', async function () {
      const unlisted = { Authorization: basic('unlisted', SECRET) };
      const answer = (grant: string) => [
        'unauthorized_client',
        `client 'unlisted' may not use the ${grant} grant (add ${grant} to its grant_types)`,
      ];
      const pushed = await pushRaw({ client_id: 'unlisted' }, unlisted);
      expect(pushed.status).to.equal(400);
      expect([pushed.body.error, pushed.body.error_description]).to.deep.equal(answer('authorization_code'));
      const query = { client_id: 'unlisted', response_type: 'code', redirect_uri: CALLBACK, code_challenge: challenge() };
      const redirected = location(
        await box.request('GET', `/auth/authorize?${new URLSearchParams({ ...query, code_challenge_method: 'S256' })}`),
      );
      expect([redirected.searchParams.get('error'), redirected.searchParams.get('error_description')]).to.deep.equal(
        answer('authorization_code'),
      );
      const token = await box.form('/auth/token', { grant_type: 'authorization_code', code: 'any', redirect_uri: CALLBACK }, unlisted);
      expect(token.status).to.equal(400);
      expect([token.body.error, token.body.error_description]).to.deep.equal(answer('authorization_code'));
      const device = await box.form('/auth/device', {}, unlisted);
      expect(device.status).to.equal(400);
      expect([device.body.error, device.body.error_description]).to.deep.equal(answer('urn:ietf:params:oauth:grant-type:device_code'));
    });

    it('a resource that is not an absolute URI, or has a fragment: 400 invalid_target, nothing pushed (RFC 8707 §2)', async function () {
      for (const resource of ['api', '//api.example', 'https://api.example#x']) {
        const res = await pushRaw({ client_id: 'web', resource });
        expect([res.status, res.body.error], resource).to.deep.equal([400, 'invalid_target']);
        expect(res.body.error_description).to.match(/resource must/);
        expect(res.body.request_uri).to.equal(undefined);
      }
      const fine = await pushRaw({ client_id: 'web', resource: 'https://api.example/v1' });
      expect(fine.status, fine.text).to.equal(201);
    });

    it('GET: 405 with Allow: POST', async function () {
      const res = await box.request('GET', '/auth/par?client_id=web');
      expect(res.status).to.equal(405);
      expect(res.headers.get('allow')).to.include('POST');
    });

    it('a body beyond the limit: 413', async function () {
      const res = await pushRaw({ client_id: 'web', state: 'x'.repeat(300 * 1024) });
      expect(res.status).to.equal(413);
    });

    it('guessing a secret meets the throttle: 429', async function () {
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) {
        statuses.push((await pushRaw({ client_id: 'throttled' }, { Authorization: basic('throttled', `guess-${i}`) })).status);
      }
      expect(statuses.slice(0, 3)).to.deep.equal([401, 401, 401]);
      expect(statuses.slice(3)).to.deep.equal([429, 429]);
    });
  });

  describe('request_uri at the authorization endpoint, as an attacker tries it', function () {
    it('an unknown request_uri: an error page, nothing redirected', async function () {
      const browser = await signedInBrowser();
      const res = await browser.get(authorizePath('web', `urn:ietf:params:oauth:request_uri:${randomBytes(32).toString('base64url')}`));
      expect(isInvalidLinkPage(res)).to.equal(true);
    });

    it('a used request_uri gives no second code', async function () {
      const pushed = await push('web');
      const browser = await signedInBrowser();
      expect(codeOf(await browser.get(authorizePath('web', pushed.requestUri)))).to.be.a('string');
      const again = await browser.get(authorizePath('web', pushed.requestUri));
      expect(codeOf(again)).to.equal(null);
      expect(isInvalidLinkPage(again)).to.equal(true);
    });

    it('another client cannot use a request_uri; its own client still can', async function () {
      const pushed = await push('web');
      const browser = await signedInBrowser();
      expect(isInvalidLinkPage(await browser.get(authorizePath('other', pushed.requestUri)))).to.equal(true);
      expect(codeOf(await browser.get(authorizePath('web', pushed.requestUri)))).to.be.a('string');
    });

    it('a request_uri opened in one browser is not another browser’s', async function () {
      const pushed = await push('web');
      const first = new FormAgent(box);
      expect((await first.get(authorizePath('web', pushed.requestUri))).status).to.equal(200); // the sign-in page
      const second = await signedInBrowser();
      expect(isInvalidLinkPage(await second.get(authorizePath('web', pushed.requestUri)))).to.equal(true);
    });

    it('many uses of one request_uri at once, in one browser: exactly one code, every other use the page, nothing else redirected', async function () {
      const pushed = await push('web');
      // The browser claims the request before it signs in, so every one of the uses below gets past the
      // claim and only the transaction that issues the code decides between them.
      const browser = new FormAgent(box);
      expect((await browser.get(authorizePath('web', pushed.requestUri))).status).to.equal(200);
      expect((await browser.signIn(ANN.email, ANN.password)).status).to.equal(303);
      // The box's database connections open first, lest opening them spread the uses out in time.
      const unknown = authorizePath('web', `urn:ietf:params:oauth:request_uri:${randomBytes(32).toString('base64url')}`);
      await Promise.all(Array.from({ length: 20 }, () => browser.get(unknown)));
      const answers = await Promise.all(Array.from({ length: 20 }, () => browser.get(authorizePath('web', pushed.requestUri))));
      const codes = answers.map(codeOf).filter((c) => c !== null);
      expect(codes).to.have.length(1);
      // The client hears once (RFC 9126 §4, one-time use): a loser is the page of a used request_uri, never a redirect.
      const losers = answers.filter((a) => codeOf(a) === null);
      expect(losers.map((a) => [a.status, a.headers.get('location')])).to.deep.equal(losers.map(() => [400, null]));
      for (const loser of losers) expect(isInvalidLinkPage(loser)).to.equal(true);
      await exchange(
        answers.find((a) => codeOf(a) !== null)!,
        pushed,
      );
    });

    it('many browsers at once: exactly one code', async function () {
      const pushed = await push('web');
      const browsers: FormAgent[] = [];
      for (let i = 0; i < 8; i++) browsers.push(await signedInBrowser());
      const answers = await Promise.all(browsers.map((b) => b.get(authorizePath('web', pushed.requestUri))));
      expect(answers.map(codeOf).filter((c) => c !== null)).to.have.length(1);
      for (const loser of answers.filter((a) => codeOf(a) === null)) expect(isInvalidLinkPage(loser)).to.equal(true);
    });

    it('allow and deny at once on one consent page: one answer reaches the client, every other use the page', async function () {
      const pushed = await push('asks', { scope: 'profile' });
      const browser = await signedInBrowser();
      const consent = await browser.get(authorizePath('asks', pushed.requestUri));
      expect(consent.status).to.equal(200);
      const form = hiddenFields(consent.text);
      const unknown = authorizePath('asks', `urn:ietf:params:oauth:request_uri:${randomBytes(32).toString('base64url')}`);
      await Promise.all(Array.from({ length: 20 }, () => browser.get(unknown)));
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, i) => browser.post('/auth/consent', { ...form, decision: i % 2 ? 'allow' : 'deny' })),
      );
      const redirected = answers.filter((a) => a.status === 302);
      expect(redirected, answers.map((a) => a.status).join(' ')).to.have.length(1);
      const back = location(redirected[0]!);
      expect(`${back.origin}${back.pathname}`).to.equal(CALLBACK);
      expect(back.searchParams.get('state')).to.equal(pushed.state);
      expect(back.searchParams.has('code') !== back.searchParams.has('error')).to.equal(true);
      for (const loser of answers.filter((a) => a.status !== 302)) expect(isInvalidLinkPage(loser)).to.equal(true);
    });

    it('a client that must push: a plain request is refused with invalid_request (RFC 9126 §4); a pushed one works', async function () {
      const browser = await signedInBrowser();
      const plain = await browser.get(
        `/auth/authorize?${new URLSearchParams({
          response_type: 'code',
          client_id: 'strict',
          redirect_uri: CALLBACK,
          state: 's1',
          code_challenge: challenge(),
          code_challenge_method: 'S256',
        })}`,
      );
      expect(location(plain).searchParams.get('error')).to.equal('invalid_request');
      expect(location(plain).searchParams.get('state')).to.equal('s1');
      const pushed = await push('strict');
      expect((await exchange(await browser.get(authorizePath('strict', pushed.requestUri)), pushed, 'strict')).access_token).to.be.a(
        'string',
      );
    });

    // Last: it moves the box's clock.
    it('an expired request_uri: an error page (RFC 9126 §4: "MUST be rejected as invalid")', async function () {
      const pushed = await push('web');
      const browser = await signedInBrowser();
      box.advanceClock(61);
      expect(isInvalidLinkPage(await browser.get(authorizePath('web', pushed.requestUri)))).to.equal(true);
    });
  });
});
