// The box as a client of upstream providers (api/people/upstream/oauth.ts, github.ts): a second
// real box is the OpenID provider (a person signs in there with a browser without JavaScript);
// GitHub is a stand-in (test/support/github-stand-in.ts), GitHub itself cannot run here.
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import * as oauth from 'oauth4webapi';
import { checkProvider } from '../../api/people/upstream/check.js';
import { authorizationUrl, finishAuthorization, type UpstreamRequest } from '../../api/people/upstream/oauth.js';
import { UPSTREAM_TIMEOUT_MS, UpstreamError, type UpstreamFailure } from '../../api/people/upstream/profile.js';
import type { IdentityProvider } from '../../api/types.js';
import { Box } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';
import { GitHubStandIn, type GitHubAccount } from '../support/github-stand-in.js';
import { freePort } from '../support/ports.js';

const CALLBACK = 'https://box-a.example/auth/upstream/box-b/callback';
/** The address rules of a SAML provider's metadata fetch: no OAuth provider's check reads them. */
const METADATA_RULES = { allowed: [], timeoutMs: 5000, boxUrl: 'https://box-a.example' };

const newRequest = (): UpstreamRequest => ({
  state: oauth.generateRandomState(),
  nonce: oauth.generateRandomNonce(),
  codeVerifier: oauth.generateRandomCodeVerifier(),
  redirectUri: CALLBACK,
});

/** The UpstreamError `work` fails with (and what it says), or a test failure if it does not. */
async function failure(work: Promise<unknown>): Promise<{ failure: UpstreamFailure; message: string }> {
  try {
    await work;
  } catch (err) {
    if (err instanceof UpstreamError) return { failure: err.failure, message: err.message };
    throw err;
  }
  throw new Error('expected an UpstreamError');
}

const oidcProvider = (settings: NonNullable<IdentityProvider['oidc']>): IdentityProvider => ({
  resourceType: 'IdentityProvider',
  id: 'upstream',
  type: 'oidc',
  oidc: settings,
});

describe('the box as a client of another box (OpenID Connect)', function () {
  this.timeout(60_000);
  let b: Box;
  let secret: string;
  let ann: { id: string; email: string; password: string };
  let provider: IdentityProvider;

  before(async function () {
    // B names people by their row id (a box from before opaque subjects), so that what the box as
    // a client reads of B can be told from what B stored: the subject's kind is not what this tests.
    b = await Box.start({ env: { BOXAUTH_PUBLIC_SUBJECTS: 'sequential' } });
    const root = await b.rootToken();
    const staff = await b.json('POST', '/groups', { name: 'staff' }, root);
    expect(staff.status, staff.text).to.equal(201);
    const made = await b.json(
      'POST',
      '/users',
      { email: 'ann@example.com', password: 'ann-password-1', email_verified: true, 'group-ids': [staff.body.id] },
      root,
    );
    expect(made.status, made.text).to.equal(201);
    ann = { id: String(made.body.id), email: 'ann@example.com', password: 'ann-password-1' };
    const bob = { email: 'bob@example.com', password: 'bob-password-1', email_verified: false };
    expect((await b.json('POST', '/users', bob, root)).status).to.equal(201);
    secret = randomBytes(16).toString('hex');
    const client = {
      grant_types: ['authorization_code'],
      secret,
      first_party: true,
      auth: { authorization_code: { redirect_uri: CALLBACK } },
    };
    // box-a has B put the claims of its scopes in ID tokens too; lean, as Core §5.4 says, in userinfo only.
    for (const [id, more] of [
      ['box-a', { claims_in_id_token: true }],
      ['lean', {}],
    ] as const) {
      const put = await b.json('PUT', `/Client/${id}`, { ...client, ...more }, root);
      expect(put.status, put.text).to.equal(201);
    }
    provider = oidcProvider({ issuer: b.url, clientId: 'box-a', scopes: ['openid', 'email', 'profile', 'groups'] });
  });
  after(async function () {
    await b?.stop();
  });

  /** Signs `person` in at box B with a browser and follows `request` there: the callback's URL. */
  async function callbackAt(person: { email: string; password: string }, request: UpstreamRequest, at = provider): Promise<URL> {
    const browser = new FormAgent(b);
    expect((await browser.signIn(person.email, person.password)).status).to.equal(303);
    const url = await authorizationUrl(at, request);
    const answer = await browser.get(url.pathname + url.search);
    expect(answer.status, answer.text.slice(0, 300)).to.equal(302);
    return new URL(answer.headers.get('location')!);
  }

  it('a sign-in at box B gives who the person is there: subject, email as verified as B says, groups, amr', async function () {
    const url = await authorizationUrl(provider, newRequest());
    expect(url.origin).to.equal(b.url);
    expect(url.searchParams.get('code_challenge_method')).to.equal('S256');
    expect(url.searchParams.get('scope')).to.equal('openid email profile groups');

    const request = newRequest();
    const profile = await finishAuthorization(provider, secret, request, await callbackAt(ann, request));
    expect(profile).to.include({ subject: ann.id, email: 'ann@example.com', emailVerified: true });
    expect(profile.groups).to.deep.equal(['staff']);
    expect(profile.amr).to.include('pwd');
    expect(profile.claims).to.include({ sub: ann.id, iss: b.url });

    const bobs = newRequest();
    const bob = await finishAuthorization(
      provider,
      secret,
      bobs,
      await callbackAt({ email: 'bob@example.com', password: 'bob-password-1' }, bobs),
    );
    expect(bob).to.include({ email: 'bob@example.com', emailVerified: false });
    expect(bob.groups).to.deep.equal([]);
  });

  it('reads userinfo too when asked: what a provider leaves out of its ID tokens', async function () {
    const lean = oidcProvider({ ...provider.oidc!, clientId: 'lean' });
    const first = newRequest();
    const idTokenOnly = await finishAuthorization(lean, secret, first, await callbackAt(ann, first, lean));
    expect(idTokenOnly).to.include({ subject: ann.id, emailVerified: false });
    expect(idTokenOnly).not.to.have.property('email');

    const withUserinfo = oidcProvider({ ...lean.oidc!, useUserinfo: true });
    const second = newRequest();
    const profile = await finishAuthorization(withUserinfo, secret, second, await callbackAt(ann, second, withUserinfo));
    expect(profile).to.include({ subject: ann.id, email: 'ann@example.com', emailVerified: true });
    expect(profile.groups).to.deep.equal(['staff']);
    expect(profile.amr).to.deep.equal(['pwd']);
  });

  it('a code used twice, a state or nonce not of this sign-in: invalid; a wrong secret: misconfigured; nothing secret said', async function () {
    const request = newRequest();
    const callback = await callbackAt(ann, request);
    await finishAuthorization(provider, secret, request, callback);
    const replayed = await failure(finishAuthorization(provider, secret, request, callback));
    expect(replayed.failure).to.equal('invalid');
    expect(replayed.message).to.include('invalid_grant');

    const other = newRequest();
    const stolen = await callbackAt(ann, other);
    for (const tampered of [
      { ...other, state: oauth.generateRandomState() },
      { ...other, codeVerifier: oauth.generateRandomCodeVerifier() },
    ]) {
      expect((await failure(finishAuthorization(provider, secret, tampered, stolen))).failure).to.equal('invalid');
    }
    const third = newRequest();
    const wrongNonce = await failure(finishAuthorization(provider, secret, { ...third, nonce: 'another' }, await callbackAt(ann, third)));
    expect(wrongNonce.failure).to.equal('invalid');

    const fourth = newRequest();
    const callback4 = await callbackAt(ann, fourth);
    const badSecret = await failure(finishAuthorization(provider, 'not-the-secret', fourth, callback4));
    expect(badSecret.failure, badSecret.message).to.equal('misconfigured'); // the box's set-up, not the person's doing
    for (const said of [replayed, wrongNonce, badSecret]) {
      for (const hidden of [secret, callback.searchParams.get('code')!, callback4.searchParams.get('code')!, fourth.codeVerifier]) {
        expect(said.message).not.to.include(hidden);
      }
    }
  });

  it('the provider saying no at the callback: refused for access_denied, invalid for another error', async function () {
    const request = newRequest();
    // Box B names itself in every answer (RFC 9207 §2), errors too.
    const iss = encodeURIComponent(b.url);
    const denied = new URL(`${CALLBACK}?error=access_denied&state=${request.state}&iss=${iss}`);
    expect((await failure(finishAuthorization(provider, secret, request, denied))).failure).to.equal('refused');
    const odd = new URL(`${CALLBACK}?error=invalid_scope&state=${request.state}&iss=${iss}`);
    expect((await failure(finishAuthorization(provider, secret, request, odd))).failure).to.equal('invalid');
  });

  it('an answer naming another issuer, or none, from a provider that says it names itself: invalid (RFC 9207 mix-up)', async function () {
    const request = newRequest();
    const real = await callbackAt(ann, request);
    expect(real.searchParams.get('iss')).to.equal(b.url);
    for (const iss of ['https://attacker.example', null]) {
      const mixed = new URL(real);
      if (iss === null) mixed.searchParams.delete('iss');
      else mixed.searchParams.set('iss', iss);
      expect((await failure(finishAuthorization(provider, secret, request, mixed))).failure, String(iss)).to.equal('invalid');
    }
  });

  it('an issuer not exactly the one its metadata names is not trusted (a trailing slash, another host name): misconfigured', async function () {
    for (const issuer of [`${b.url}/`, b.url.replace('127.0.0.1', 'localhost')]) {
      const said = await failure(authorizationUrl(oidcProvider({ ...provider.oidc!, issuer }), newRequest()));
      expect(said.failure, issuer).to.equal('misconfigured');
    }
  });

  it('box B rotating its signing key between two sign-ins: the second is checked with its new key', async function () {
    const first = newRequest();
    const before = await finishAuthorization(provider, secret, first, await callbackAt(ann, first));
    await b.rotateSigningKey('RS256'); // what B signs ID tokens with
    const second = newRequest();
    const callback = await callbackAt(ann, second);
    const after = await finishAuthorization(provider, secret, second, callback);
    expect(after.subject).to.equal(before.subject);
    // B publishes the old key and the new one, and signs with the new one: a kid the box had not fetched.
    const jwks = (await b.json('GET', '/.well-known/jwks.json')).body.keys as { kid: string; alg: string }[];
    expect(jwks.filter((k) => k.alg === 'RS256')).to.have.length(2);
  });
});

describe('a provider that is down or slow', function () {
  this.timeout(30_000);
  const servers: (net.Server | http.Server)[] = [];
  const held = new Set<net.Socket>();
  after(async function () {
    held.forEach((socket) => socket.destroy());
    for (const s of servers) {
      if (s instanceof http.Server) s.closeAllConnections();
      await new Promise((resolve) => s.close(resolve));
    }
  });

  /** A server that takes connections and never answers. */
  async function silent(): Promise<string> {
    const server = net.createServer((socket) => void held.add(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
    return `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  }

  /** A server that answers every request with `status`. */
  async function answering(status: number): Promise<string> {
    const server = http.createServer((_req, res) => res.writeHead(status, { 'Content-Type': 'application/json' }).end('{}'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
    return `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  }

  const oauth2 = (base: string, tokenBase = base): IdentityProvider => ({
    resourceType: 'IdentityProvider',
    id: 'service',
    type: 'oauth2',
    oauth2: {
      authorizationUrl: `${base}/authorize`,
      tokenUrl: `${tokenBase}/token`,
      userinfoUrl: `${base}/userinfo`,
      clientId: 'box-a',
    },
  });

  it('a closed port: unavailable, at once', async function () {
    const said = await failure(
      authorizationUrl(oidcProvider({ issuer: `http://127.0.0.1:${await freePort()}`, clientId: 'box-a' }), newRequest()),
    );
    expect(said.failure).to.equal('unavailable');
    // Refused at once, not waited out: the message says so.
    expect(said.message)
      .to.match(/is unreachable/)
      .and.not.match(/no answer within/);
  });

  it('a provider that never answers: unavailable within the time limit (discovery, then the token endpoint)', async function () {
    const slow = await silent();
    const atDiscovery = await failure(authorizationUrl(oidcProvider({ issuer: slow, clientId: 'box-a' }), newRequest()));
    expect(atDiscovery.failure).to.equal('unavailable');
    expect(atDiscovery.message).to.include(`no answer within ${UPSTREAM_TIMEOUT_MS} ms`);
    // Asked again at once: the failure is remembered a while, nobody waits on the dead issuer again.
    const again = await failure(authorizationUrl(oidcProvider({ issuer: slow, clientId: 'box-a' }), newRequest()));
    expect(again.message).to.equal(atDiscovery.message);

    const request = newRequest();
    const callback = new URL(`${CALLBACK}?code=c0de&state=${request.state}`);
    const atToken = await failure(finishAuthorization(oauth2('https://service.example', slow), 'secret', request, callback));
    expect(atToken.failure).to.equal('unavailable');
    expect(atToken.message).to.include(`no answer within ${UPSTREAM_TIMEOUT_MS} ms`);
  });

  it('a provider answering 503: unavailable; answering 400 or 200 without a token: invalid', async function () {
    const request = newRequest();
    const callback = new URL(`${CALLBACK}?code=c0de&state=${request.state}`);
    const down = await answering(503);
    expect((await failure(authorizationUrl(oidcProvider({ issuer: down, clientId: 'box-a' }), newRequest()))).failure).to.equal(
      'unavailable',
    );
    expect((await failure(finishAuthorization(oauth2(down), 'secret', request, callback))).failure).to.equal('unavailable');
    for (const status of [400, 200]) {
      const odd = await answering(status);
      expect((await failure(finishAuthorization(oauth2(odd), 'secret', request, callback))).failure, String(status)).to.equal('invalid');
    }
  });
});

describe('GitHub (against a stand-in for GitHub)', function () {
  this.timeout(30_000);
  let github: GitHubStandIn;
  const octo: GitHubAccount = {
    id: 583231,
    login: 'octocat',
    name: 'The Octocat',
    emails: [
      { email: 'octo@old.example', primary: false, verified: true },
      { email: 'octocat@github.example', primary: true, verified: true },
    ],
    orgs: ['acme', 'hobby'],
    teams: ['acme/platform', 'acme/sre', 'hobby/knitting'],
  };

  before(async function () {
    github = await GitHubStandIn.start();
  });
  after(async function () {
    await github?.stop();
  });

  const provider = (organizations?: string[]): IdentityProvider => ({
    resourceType: 'IdentityProvider',
    id: 'github',
    type: 'github',
    github: { clientId: github.clientId, url: github.url, apiUrl: github.apiUrl, ...(organizations ? { organizations } : {}) },
  });

  /** The browser at GitHub's authorization page, signed in there as `account`: the callback's URL. */
  async function signIn(account: GitHubAccount | undefined, at: IdentityProvider, request: UpstreamRequest): Promise<URL> {
    github.signedIn = account;
    const url = await authorizationUrl(at, request);
    expect(url.href.startsWith(`${github.url}/login/oauth/authorize?`)).to.equal(true);
    expect(url.searchParams.get('scope')).to.equal('read:user user:email read:org');
    const res = await fetch(url, { redirect: 'manual' });
    return new URL(res.headers.get('location')!);
  }

  const finish = async (account: GitHubAccount | undefined, at = provider()): Promise<ReturnType<typeof finishAuthorization>> => {
    const request = newRequest();
    return finishAuthorization(at, github.clientSecret, request, await signIn(account, at, request));
  };

  it('gives the numeric id, the verified primary email, the name, and orgs and teams as groups', async function () {
    const profile = await finish(octo);
    expect(profile).to.deep.include({
      subject: '583231',
      email: 'octocat@github.example',
      emailVerified: true,
      name: 'The Octocat',
      amr: [],
    });
    expect(profile.groups).to.have.members(['acme', 'hobby', 'acme/platform', 'acme/sre', 'hobby/knitting']);
    expect(profile.claims).to.include({ login: 'octocat', id: 583231 });
  });

  it('reads every page of a long list (the Link header)', async function () {
    github.pageSize = 2;
    try {
      expect((await finish(octo)).groups).to.have.length(5);
    } finally {
      github.pageSize = 100;
    }
  });

  it('a primary email GitHub has not verified is no email at all, nor is a verified one that is not primary', async function () {
    const unverified = {
      ...octo,
      id: 2,
      emails: [
        { email: 'new@github.example', primary: true, verified: false },
        { email: 'other@x.example', primary: false, verified: true },
      ],
    };
    const profile = await finish(unverified);
    expect(profile.emailVerified).to.equal(false);
    expect(profile).not.to.have.property('email');
  });

  it('a verified primary email that is no address (a CR LF and a header) is no email either, and says why', async function () {
    const injected = { ...octo, id: 4, emails: [{ email: 'octo@github.example\r\nBcc: all@x.example', primary: true, verified: true }] };
    const profile = await finish(injected);
    expect(profile).not.to.have.property('email');
    expect(profile.emailVerified).to.equal(false);
    expect(profile.unusableEmail).to.include('control or invisible character');
    expect(JSON.stringify(profile.claims)).not.to.include('Bcc');
  });

  it('with organizations set, only their members get in, with only their groups', async function () {
    const profile = await finish(octo, provider(['ACME']));
    expect(profile.groups).to.have.members(['acme', 'acme/platform', 'acme/sre']);
    const outsider = { ...octo, id: 3, login: 'outsider', orgs: ['hobby'], teams: ['hobby/knitting'] };
    const said = await failure(finish(outsider, provider(['acme'])));
    expect(said.failure).to.equal('refused');
  });

  it('a person who says no at GitHub: refused; a code used twice: invalid', async function () {
    expect((await failure(finish(undefined))).failure).to.equal('refused');
    const request = newRequest();
    const callback = await signIn(octo, provider(), request);
    await finishAuthorization(provider(), github.clientSecret, request, callback);
    const replayed = await failure(finishAuthorization(provider(), github.clientSecret, request, callback));
    expect(replayed.failure).to.equal('invalid');
    expect(replayed.message).not.to.include(callback.searchParams.get('code')!);
  });

  it('$check: the client credentials GitHub accepts pass (bad_verification_code for a made-up code); a wrong secret fails', async function () {
    const good = await checkProvider(provider(), github.clientSecret, CALLBACK, METADATA_RULES);
    expect(good.map((c) => [c.check, c.ok])).to.deep.equal([['client', true]]);
    expect(good[0]!.detail).to.include('bad_verification_code');
    const wrong = 'not-the-github-secret-2';
    const bad = await checkProvider(provider(), wrong, CALLBACK, METADATA_RULES);
    expect(bad.map((c) => [c.check, c.ok])).to.deep.equal([['client', false]]);
    expect(bad[0]!.detail).to.include('incorrect_client_credentials').and.not.include(wrong);
  });

  it('a wrong client secret (GitHub answers 200 with incorrect_client_credentials): misconfigured, the secret never said', async function () {
    const request = newRequest();
    const callback = await signIn(octo, provider(), request);
    const wrong = 'not-the-github-secret-1';
    const said = await failure(finishAuthorization(provider(), wrong, request, callback));
    expect(said.failure, said.message).to.equal('misconfigured');
    expect(said.message).to.include('incorrect_client_credentials').and.not.include(wrong);
  });
});
