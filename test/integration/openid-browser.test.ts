// OpenID Connect's browser requests as an attacker tries them: prompt=login and
// max_age are answered only by a sign-in made after the request (not by opening
// the sign-in page's way back, nor by posting a consent form), and RP-initiated
// logout ends only what the browser asking for it holds (OpenID Connect Core
// §3.1.2.1, RP-Initiated Logout 1.0 §2-§3, §6).
import { expect } from 'chai';
import { createHash, randomBytes } from 'node:crypto';
import { decodeJwt } from 'jose';
import { Box, basic, type JsonResponse } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';

const CALLBACK = 'https://rp.example/callback';
const ANN = { email: 'ann@example.com', password: 'ann-password-1' };
const SECRET = 'rp-secret-123';

describe('OpenID Connect in the browser, as an attacker tries it', function () {
  this.timeout(60_000);
  let box: Box;
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');

  before(async function () {
    box = await Box.start({ movableClock: true }); // max_age and expired hints by moving its clock, not by waiting
    const root = await box.rootToken();
    expect((await box.json('POST', '/users', ANN, root)).status).to.equal(201);
    const code = (settings: Record<string, unknown> = {}) => ({
      redirect_uri: CALLBACK,
      refresh_token: true,
      ...settings,
    });
    for (const [id, client] of Object.entries({
      rp: { first_party: true, auth: { authorization_code: code() } },
      'asks-consent': { auth: { authorization_code: code() } },
      'short-lived': {
        first_party: true,
        auth: { authorization_code: code({ id_token_expiration: 1 }) },
      },
    })) {
      const res = await box.json('PUT', `/Client/${id}`, { grant_types: ['authorization_code'], secret: SECRET, ...client }, root);
      expect(res.status, res.text).to.equal(201);
    }
  });
  after(async function () {
    await box?.stop();
  });

  const authorizePath = (client: string, extra: Record<string, string> = {}): string =>
    `/auth/authorize?${new URLSearchParams({
      response_type: 'code',
      client_id: client,
      redirect_uri: CALLBACK,
      scope: 'openid email',
      state: randomBytes(8).toString('hex'),
      nonce: randomBytes(8).toString('hex'),
      code_challenge: challenge,
      code_challenge_method: 'S256',
      ...extra,
    })}`;
  const codeIn = (res: JsonResponse): string | null =>
    res.status === 302 ? new URL(res.headers.get('location')!).searchParams.get('code') : null;
  const isSignInPage = (res: JsonResponse): boolean => res.status === 200 && res.text.includes('action="/auth/sign-in"');

  interface Tokens {
    access_token: string;
    refresh_token: string;
    id_token: string;
  }

  /** The client's side: the code of `answer` exchanged for tokens. */
  async function exchange(answer: JsonResponse, client = 'rp'): Promise<Tokens> {
    const code = codeIn(answer);
    expect(code, `${answer.status} ${answer.text.slice(0, 300)}`).to.be.a('string');
    const res = await box.form(
      '/auth/token',
      {
        grant_type: 'authorization_code',
        code: code!,
        redirect_uri: CALLBACK,
        code_verifier: verifier,
      },
      { Authorization: basic(client, SECRET) },
    );
    expect(res.status, res.text).to.equal(200);
    return res.body as Tokens;
  }

  async function signedInBrowser(): Promise<FormAgent> {
    const browser = new FormAgent(box);
    expect((await browser.signIn(ANN.email, ANN.password)).status).to.equal(303);
    return browser;
  }

  /** Tokens of `client` for the person signed in to `browser`, which needs no sign-in and no consent. */
  async function appTokens(browser: FormAgent, client = 'rp'): Promise<Tokens> {
    return exchange(await browser.get(authorizePath(client)), client);
  }

  describe('prompt=login and max_age', function () {
    const requests: Record<string, string>[] = [{ prompt: 'login' }, { max_age: '0' }, { max_age: '1' }];
    for (const extra of requests) {
      const label = new URLSearchParams(extra).toString();
      it(`${label}: the sign-in page's way back answers nothing until the person signs in again; then auth_time is that sign-in`, async function () {
        const browser = await signedInBrowser();
        const first = decodeJwt((await appTokens(browser)).id_token);
        if (extra.max_age === '1') box.advanceClock(1.1); // the sign-in must be older than max_age
        const asked = await browser.get(authorizePath('rp', extra));
        expect(isSignInPage(asked), asked.text.slice(0, 300)).to.equal(true);
        const returnTo = hiddenFields(asked.text).return_to!;
        expect(returnTo).to.match(/^\/auth\/authorize\?/);

        // Straight back, without the password: the sign-in page again, never a code.
        const skipped = await browser.get(returnTo);
        expect(codeIn(skipped), 'a code without a sign-in').to.equal(null);
        expect(isSignInPage(skipped)).to.equal(true);

        const before = Math.floor(Date.now() / 1000);
        const signedIn = await browser.post('/auth/sign-in', {
          ...hiddenFields(asked.text),
          ...ANN,
        });
        expect(signedIn.status).to.equal(303);
        const claims = decodeJwt((await exchange(await browser.get(signedIn.headers.get('location')!))).id_token);
        expect(claims.sid).not.to.equal(first.sid);
        expect(claims.auth_time).to.be.at.least(before);
      });
    }

    it('a way back made in another browser, or for another request, proves nothing', async function () {
      const stranger = new FormAgent(box);
      const asked = await stranger.get(authorizePath('rp', { prompt: 'login' }));
      expect(isSignInPage(asked)).to.equal(true);
      const returnTo = hiddenFields(asked.text).return_to!;
      const victim = await signedInBrowser();
      const opened = await victim.get(returnTo);
      expect(codeIn(opened)).to.equal(null);
      expect(isSignInPage(opened)).to.equal(true);

      // In the browser it was made for, the marker of one request does not answer another.
      expect((await stranger.signIn(ANN.email, ANN.password)).status).to.equal(303);
      const marker = new URL(returnTo, box.url).searchParams.get('sign_in_after')!;
      const other = await stranger.get(`${authorizePath('rp', { prompt: 'login' })}&sign_in_after=${encodeURIComponent(marker)}`);
      expect(codeIn(other)).to.equal(null);
      expect(isSignInPage(other)).to.equal(true);
      // And a browser that was not signed in when the request came is answered once it is.
      expect(codeIn(await stranger.get(returnTo))).to.be.a('string');
    });

    it('the consent form of a prompt=login request answers nothing until the person signs in again', async function () {
      const browser = await signedInBrowser();
      const asked = await browser.get(authorizePath('asks-consent', { prompt: 'login' }));
      expect(isSignInPage(asked)).to.equal(true);
      const { csrf, return_to: returnTo } = hiddenFields(asked.text);
      // The page's CSRF token is the browser's: a consent form made of the request's parameters passes it.
      const request = Object.fromEntries(new URL(returnTo!, box.url).searchParams);
      const forged = await browser.post('/auth/consent', {
        ...request,
        csrf: csrf!,
        decision: 'allow',
      });
      expect(codeIn(forged), 'a code without a sign-in').to.equal(null);
      expect(isSignInPage(forged)).to.equal(true);

      const signedIn = await browser.post('/auth/sign-in', {
        ...hiddenFields(asked.text),
        ...ANN,
      });
      const consent = await browser.get(signedIn.headers.get('location')!);
      expect(consent.text).to.include('value="allow"');
      expect(codeIn(await browser.consent(consent, 'allow'))).to.be.a('string');
    });
  });

  describe('RP-initiated logout', function () {
    const logoutPath = (params: Record<string, string>): string => `/auth/logout?${new URLSearchParams(params)}`;
    const asks = (res: JsonResponse): boolean => res.status === 200 && res.text.includes('Sign out?') && res.text.includes('name="csrf"');
    const userinfoStatus = async (tokens: Tokens): Promise<number> =>
      (
        await box.request('GET', '/auth/userinfo', {
          headers: { Authorization: `Bearer ${tokens.access_token}` },
        })
      ).status;
    const refreshStatus = async (tokens: Tokens, client = 'rp'): Promise<number> =>
      (
        await box.form(
          '/auth/token',
          { grant_type: 'refresh_token', refresh_token: tokens.refresh_token },
          { Authorization: basic(client, SECRET) },
        )
      ).status;
    const signedInAs = async (browser: FormAgent): Promise<boolean> => (await browser.get('/auth/signed-in')).text.includes(ANN.email);

    /** An ID token of `browser`'s session that has expired (client short-lived: 1 second). */
    async function expiredHint(browser: FormAgent): Promise<string> {
      const { id_token: hint } = await appTokens(browser, 'short-lived');
      box.advanceClock(2.1); // past its exp: the client's ID tokens live 1 second
      return hint;
    }

    it("an ID token alone, expired or not, from a stranger without the person's browser: asks, and ends nothing", async function () {
      const victim = await signedInBrowser();
      const tokens = await appTokens(victim);
      const other = await appTokens(victim, 'short-lived');
      for (const hint of [await expiredHint(victim), tokens.id_token]) {
        const bare = await box.request('GET', logoutPath({ id_token_hint: hint }));
        expect(asks(bare), bare.text.slice(0, 300)).to.equal(true);
        // Confirmed in the stranger's own browser: it has nothing to end.
        const stranger = new FormAgent(box);
        const asked = await stranger.get(logoutPath({ id_token_hint: hint }));
        expect(asks(asked)).to.equal(true);
        expect((await stranger.post('/auth/logout', hiddenFields(asked.text))).text).to.include('You are signed out');
      }
      expect(await signedInAs(victim)).to.equal(true);
      expect(await userinfoStatus(tokens)).to.equal(200);
      expect(await userinfoStatus(other)).to.equal(200);
      expect(await refreshStatus(tokens)).to.equal(200);
    });

    it("the confirmation ends only the browser that asks: the same person's other browser and its apps stay signed in", async function () {
      const home = await signedInBrowser();
      const homeTokens = await appTokens(home);
      const work = await signedInBrowser();
      const workTokens = await appTokens(work);
      const asked = await work.get(logoutPath({ id_token_hint: homeTokens.id_token }));
      expect(asks(asked)).to.equal(true);
      expect((await work.post('/auth/logout', hiddenFields(asked.text))).text).to.include('You are signed out');
      expect(await signedInAs(work)).to.equal(false);
      expect(await userinfoStatus(workTokens)).to.equal(401);
      expect(await signedInAs(home)).to.equal(true);
      expect(await userinfoStatus(homeTokens)).to.equal(200);
      expect(await refreshStatus(homeTokens)).to.equal(200);
    });

    it("a logout form without the page's CSRF token does nothing, even with an expired ID token of the browser's own session", async function () {
      const browser = await signedInBrowser();
      const tokens = await appTokens(browser);
      const hint = await expiredHint(browser);
      const forms: Record<string, string>[] = [{}, { id_token_hint: hint }, { id_token_hint: hint, csrf: 'x'.repeat(43) }];
      for (const fields of forms) {
        const res = await browser.post('/auth/logout', fields);
        expect(asks(res), JSON.stringify(fields)).to.equal(true);
      }
      expect(asks(await browser.get(logoutPath({ id_token_hint: hint })))).to.equal(true);
      expect(await signedInAs(browser)).to.equal(true);
      expect(await userinfoStatus(tokens)).to.equal(200);
    });

    it("with the browser's own session and an unexpired ID token of it, logout happens at once", async function () {
      const browser = await signedInBrowser();
      const tokens = await appTokens(browser);
      const res = await browser.get(logoutPath({ id_token_hint: tokens.id_token }));
      expect(res.text).to.include('You are signed out');
      expect(await signedInAs(browser)).to.equal(false);
      expect(await userinfoStatus(tokens)).to.equal(401);
      expect(await refreshStatus(tokens)).to.equal(400);
    });
  });
});
