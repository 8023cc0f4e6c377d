// People from where they already are (issue 38): box B is the upstream OpenID Provider of box A,
// real on both sides. A person of B signs in to A through B: made just in time, linked, their
// groups following B's by A's rules; a Client that accepts only B gets only B's sign-ins. And
// what others try: an email asserted by a provider not trusted for it, a callback carried to
// another browser or to another provider, a callback replayed, one provider's identity aimed at
// the person another provider linked, an upstream that never answers.
import { expect } from 'chai';
import net from 'node:net';
import { createHash, randomBytes } from 'node:crypto';
import { Box, basic, eventually, type JsonResponse } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { connectUpstream, idTokenOf, relyingParty, RP, TwoHostBrowser } from '../support/upstream.js';
import { startAll } from '../support/start-all.js';

const PASSWORD = 'a-good-password-1';

describe('signing in through an upstream OpenID Provider', function () {
  this.timeout(180_000);
  let a: Box;
  let b: Box;

  before(async function () {
    // A's ID tokens name people by their row id, as a box that had people before release 036 does (subjects.test.ts: the others).
    [a, b] = await startAll([Box.start({ env: { BOXAUTH_PUBLIC_SUBJECTS: 'sequential' } }), Box.start({ hostname: 'localhost' })]);
    await connectUpstream(a, b, 'corp', {
      displayName: 'Corp',
      linking: { trustEmail: true },
      groups: [
        { group: 'engineers', upstream: 'eng' },
        { group: 'admins-upstream', upstream: 'ops' },
      ],
    });
    // The same B, registered a second time, not trusted for emails.
    await connectUpstream(a, b, 'other', { displayName: 'Other' });
    await relyingParty(a, 'rp');
    await relyingParty(a, 'only-corp', { identityProviders: ['corp'] });
  });
  after(async () => Promise.all([a?.stop(), b?.stop()]));

  /** A person of B (in B's `groups`), with a verified email unless told. */
  async function upstreamPerson(groups: string[] = [], emailVerified = true): Promise<string> {
    const email = `p-${randomBytes(4).toString('hex')}@example.com`;
    const root = await b.rootToken();
    const ids: number[] = [];
    for (const name of groups) {
      let res = await b.json('POST', '/groups', { name }, root);
      if (res.status === 201) ids.push(Number(res.body.id));
      else {
        res = await b.json('GET', `/groups?name=${name}`, undefined, root);
        ids.push(Number(res.body.entry?.[0]?.resource?.id ?? res.body[0]?.id));
      }
    }
    const res = await b.json('POST', '/users', { email, password: PASSWORD, email_verified: emailVerified, 'group-ids': ids }, root);
    expect(res.status, res.text).to.equal(201);
    return email;
  }

  async function personAtA(email: string): Promise<Record<string, any> | undefined> {
    const res = await a.json('GET', `/users?email=${encodeURIComponent(email)}`, undefined, await a.rootToken());
    expect(res.status, res.text).to.equal(200);
    const list = (res.body.entry?.map((e: any) => e.resource) ?? res.body) as Record<string, any>[];
    return list.find((u) => u.email === email);
  }

  /** The claims of an ID token for `client` through the browser signed in at A. */
  const idToken = async (browser: FormAgent, client = 'rp'): Promise<Record<string, any>> => (await idTokenOf(a, browser, client)).claims;

  it('makes a person of B a person of A on their first sign-in, with the groups A maps, and only those', async () => {
    const email = await upstreamPerson(['eng', 'unmapped-1', 'unmapped-2']);
    const browser = new TwoHostBrowser(a, b);
    const res = await browser.signIn('corp', email, PASSWORD);
    expect(res.status, res.text).to.equal(303);
    expect(res.headers.get('location')).to.equal('/auth/signed-in');
    const person = await personAtA(email);
    expect(person, 'made at A').to.not.equal(undefined);
    const claims = await idToken(browser.atA);
    expect(claims.email).to.equal(email);
    expect(claims.email_verified).to.equal(true); // B verified it, and corp is trusted for emails
    expect(claims.groups).to.deep.equal(['engineers']);
  });

  it('signs the same person in next time, their groups following B (added and removed)', async () => {
    const email = await upstreamPerson(['eng']);
    const browser = new TwoHostBrowser(a, b);
    expect((await browser.signIn('corp', email, PASSWORD)).status).to.equal(303);
    const first = await personAtA(email);
    // At B, eng is left and ops joined.
    const root = await b.rootToken();
    const atB = (await b.json('GET', `/users?email=${encodeURIComponent(email)}`, undefined, root)).body;
    const bUser = (atB.entry?.map((e: any) => e.resource) ?? atB)[0];
    let ops = await b.json('POST', '/groups', { name: 'ops' }, root);
    if (ops.status !== 201) ops = { ...ops, body: (await b.json('GET', '/groups?name=ops', undefined, root)).body.entry[0].resource };
    const put = await b.json('PUT', `/users/${bUser.id}`, { email, 'group-ids': [Number(ops.body.id)] }, root);
    expect(put.status, put.text).to.equal(200);
    const again = new TwoHostBrowser(a, b);
    expect((await again.signIn('corp', email, PASSWORD)).status).to.equal(303);
    expect((await personAtA(email))!.id).to.equal(first!.id);
    expect((await idToken(again.atA)).groups).to.deep.equal(['admins-upstream']);
  });

  it('makes one person of one identity, however many first sign-ins race', async () => {
    const email = await upstreamPerson();
    const browsers = Array.from({ length: 8 }, () => new TwoHostBrowser(a, b));
    // Signed in at B one after the other (B's own throttle counts passwords before it checks them); A's callbacks race.
    const callbacks: string[] = [];
    for (const browser of browsers) callbacks.push(await browser.atUpstream(await browser.start('corp'), email, PASSWORD));
    const answers = await Promise.all(browsers.map((browser, i) => browser.callback(callbacks[i]!)));
    expect(answers.map((r) => r.status)).to.deep.equal(Array(8).fill(303));
    const subjects = new Set(await Promise.all(browsers.map(async (browser) => (await idToken(browser.atA)).sub as string)));
    expect(subjects.size, 'one person').to.equal(1);
  });

  it("does not reach A's person with the same email through a provider not trusted for emails", async () => {
    const email = await upstreamPerson();
    const made = await a.json('POST', '/users', { email, password: PASSWORD }, await a.rootToken());
    expect(made.status).to.equal(201);
    const browser = new TwoHostBrowser(a, b);
    const res = await browser.signIn('other', email, PASSWORD);
    expect(res.status).to.equal(403);
    expect(res.text).to.include('Sign in the way you usually do');
    // The page leads on: a sign-in again (docs/guides/branding-and-languages.md).
    expect(res.text).to.include('<h1>Not signed in</h1>').and.include('<a href="/auth/sign-in">Sign in again</a>');
    expect((await browser.atA.get('/auth/account')).status, 'not signed in').to.equal(303);
  });

  it("does not reach A's person with the same email on an email the upstream did not verify, even where trusted", async () => {
    const email = await upstreamPerson([], false);
    const made = await a.json('POST', '/users', { email, password: PASSWORD }, await a.rootToken());
    expect(made.status).to.equal(201);
    const res = await new TwoHostBrowser(a, b).signIn('corp', email, PASSWORD);
    expect(res.status).to.equal(403);
  });

  it("links to A's person with the same email on a verified email from a provider trusted for it", async () => {
    const email = await upstreamPerson();
    const made = await a.json('POST', '/users', { email, password: PASSWORD }, await a.rootToken());
    const browser = new TwoHostBrowser(a, b);
    expect((await browser.signIn('corp', email, PASSWORD)).status).to.equal(303);
    expect((await idToken(browser.atA)).sub).to.equal(String(made.body.id));
  });

  it("never signs one provider's identity in as the person another provider linked (same subject)", async () => {
    // B's person signs in through corp (trusted): made at A and linked to corp. The very same B
    // identity (same `sub`) through `other`: not corp's person, whatever the subject says.
    const email = await upstreamPerson();
    expect((await new TwoHostBrowser(a, b).signIn('corp', email, PASSWORD)).status).to.equal(303);
    const res = await new TwoHostBrowser(a, b).signIn('other', email, PASSWORD);
    expect(res.status).to.equal(403);
  });

  it("refuses a callback carried to another browser, replayed, or delivered at another provider's path", async () => {
    const email = await upstreamPerson();
    const victim = new TwoHostBrowser(a, b);
    const location = await victim.atUpstream(await victim.start('corp'), email, PASSWORD);
    // Another browser with the victim's callback (a login CSRF, a leaked URL): nobody is signed in.
    const attacker = new TwoHostBrowser(a, b);
    const stolen = await attacker.callback(location);
    expect(stolen.status).to.equal(400);
    expect((await attacker.atA.get('/auth/account')).status).to.equal(303);
    // The state was used by that attempt: the victim's own delivery finds nothing either (replay).
    expect((await victim.callback(location)).status).to.equal(400);
    // Begun at corp, delivered at other's callback: refused (a mix-up).
    const second = new TwoHostBrowser(a, b);
    const there = new URL(await second.atUpstream(await second.start('corp'), email, PASSWORD));
    const mixed = await second.atA.get(there.pathname.replace('/corp/', '/other/') + there.search);
    expect(mixed.status).to.equal(400);
    // The honest way still works.
    expect((await new TwoHostBrowser(a, b).signIn('corp', email, PASSWORD)).status).to.equal(303);
  });

  /** The audit trail's failed upstream events through IdentityProvider `id`. */
  const auditOf = async (id: string): Promise<Record<string, any>[]> => {
    const res = await a.json('GET', '/AuditEvent?event=upstream&outcome=failure&_count=1000', undefined, await a.rootToken());
    expect(res.status, res.text).to.equal(200);
    return (res.body.entry as { resource: Record<string, any> }[])
      .map((e) => e.resource)
      .filter((e) => JSON.stringify(e).includes(`"${id}"`));
  };
  const SET_UP_FAULT = "Signing in through Broken is not working right now; this is a problem with the box's set-up, not with you.";
  const expectSetUpFault = (answer: JsonResponse): void => {
    expect(answer.status, answer.text).to.equal(502);
    expect(answer.text).to.include(SET_UP_FAULT);
    expect(answer.text).not.to.include('Start again');
  };

  it("a wrong client secret is the box's set-up, not the person's: its own page, the cause in the log and audit trail", async () => {
    const wrong = 'not-the-secret-at-b-123';
    await connectUpstream(a, b, 'broken-secret', { displayName: 'Broken', secret: wrong });
    const email = await upstreamPerson();
    const answer = await new TwoHostBrowser(a, b).signIn('broken-secret', email, PASSWORD);
    expectSetUpFault(answer);
    const events = await eventually('the refusal audited', async () => {
      const found = (await auditOf('broken-secret')).filter((e) => JSON.stringify(e).includes('misconfigured'));
      return found.length > 0 && found;
    });
    expect(JSON.stringify(events))
      .to.include("misconfigured: the token endpoint: the provider refused the box's client")
      .and.not.include(wrong);
    const logged = a.logs.filter((l) => l.includes('upstream provider misconfigured') && l.includes('broken-secret'));
    expect(logged.length).to.be.greaterThan(0);
    expect(JSON.parse(logged[0]!).level).to.be.oneOf([50, 'error']);
    expect(a.logs.join('\n')).not.to.include(wrong);
  });

  it("metadata naming another issuer is the box's set-up too: its own page at the button, audited", async () => {
    // B's metadata says its issuer is b.url; the provider is configured with a trailing slash, which no ID token of B would carry.
    await connectUpstream(a, b, 'broken-issuer', { displayName: 'Broken' });
    const root = await a.rootToken();
    const { meta: _meta, ...spec } = (await a.json('GET', '/IdentityProvider/broken-issuer', undefined, root)).body;
    const put = await a.json('PUT', '/IdentityProvider/broken-issuer', { ...spec, oidc: { ...spec.oidc, issuer: `${b.url}/` } }, root);
    expect(put.status, put.text).to.equal(200);
    expectSetUpFault(await new TwoHostBrowser(a, b).start('broken-issuer'));
    const events = await eventually('the refusal audited', async () => {
      const found = (await auditOf('broken-issuer')).filter((e) => JSON.stringify(e).includes('misconfigured'));
      return found.length > 0 && found;
    });
    expect(JSON.stringify(events)).to.include('issuer');
  });

  it('a replayed callback still says to start again: the person can mend that', async () => {
    const email = await upstreamPerson();
    const browser = new TwoHostBrowser(a, b);
    const location = await browser.atUpstream(await browser.start('corp'), email, PASSWORD);
    expect((await browser.callback(location)).status).to.equal(303);
    const replayed = await browser.callback(location);
    expect(replayed.status).to.equal(400);
    expect(replayed.text).to.include('Start again from the sign-in page');
    expect(replayed.text).not.to.include('set-up');
  });

  describe('POST /IdentityProvider/<id>/$check: a provider tried before people use it', function () {
    const check = async (id: string, token?: string): Promise<JsonResponse> =>
      a.json('POST', `/IdentityProvider/${id}/$check`, undefined, token ?? (await a.rootToken()));
    const byName = (res: JsonResponse): Record<string, { ok: boolean; detail: string }> =>
      Object.fromEntries((res.body.checks as { check: string; ok: boolean; detail: string }[]).map((c) => [c.check, c]));

    it('a provider set up right: discovery, issuer, keys and the client credentials all pass, no secret said', async () => {
      const res = await check('corp');
      expect(res.status, res.text).to.equal(200);
      expect(res.body.ok, res.text).to.equal(true);
      expect(res.body.checks.map((c: { check: string }) => c.check)).to.deep.equal(['discovery', 'issuer', 'keys', 'client']);
      expect(byName(res).client!.detail).to.include('invalid_grant');
      expect(res.text).not.to.include('upstream-secret-corp-123');
    });

    it('a wrong secret fails the client check; another issuer fails the issuer check; a dead issuer fails discovery', async () => {
      const wrong = 'wrong-secret-for-check-1';
      await connectUpstream(a, b, 'check-secret', { secret: wrong });
      const secretCheck = await check('check-secret');
      expect(secretCheck.status).to.equal(200);
      expect(secretCheck.body.ok).to.equal(false);
      expect(byName(secretCheck).client).to.include({ ok: false });
      expect(byName(secretCheck).client!.detail).to.match(/^misconfigured: .*refused the box's client/);
      expect(byName(secretCheck).issuer).to.include({ ok: true });
      expect(secretCheck.text).not.to.include(wrong);

      const root = await a.rootToken();
      const put = async (id: string, issuer: string): Promise<void> => {
        const res = await a.json('PUT', `/IdentityProvider/${id}`, { type: 'oidc', oidc: { issuer, clientId: 'x' }, disabled: true }, root);
        expect(res.status, res.text).to.be.oneOf([200, 201]);
      };
      await put('check-issuer', `${b.url}/`);
      const issuerCheck = await check('check-issuer'); // a disabled provider is checked too: tried before it is turned on
      expect(issuerCheck.body.ok).to.equal(false);
      expect(byName(issuerCheck).discovery).to.include({ ok: true });
      expect(byName(issuerCheck).issuer).to.include({ ok: false });
      expect(byName(issuerCheck).issuer!.detail).to.include(JSON.stringify(b.url));

      const closed = net.createServer();
      await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
      const port = (closed.address() as net.AddressInfo).port;
      await new Promise<void>((r) => closed.close(() => r()));
      await put('check-dead', `http://127.0.0.1:${port}`);
      const deadCheck = await check('check-dead');
      expect(deadCheck.body).to.deep.include({ ok: false });
      expect(deadCheck.body.checks).to.have.length(1);
      expect(byName(deadCheck).discovery!.detail).to.match(/^unavailable: .*unreachable/);
    });

    it('only for an administrator of the whole box; 404 for no such provider', async () => {
      expect((await a.json('POST', '/IdentityProvider/corp/$check')).status).to.equal(401);
      const limited = await a.addClient('checker', {}, { policy: false });
      const policy = { engine: 'matcho', link: [{ id: 'checker', resourceType: 'Client' }], matcho: { 'request-method': 'post' } };
      expect((await a.json('PUT', '/AccessPolicy/checker-posts', policy, await a.rootToken())).status).to.equal(201);
      const token = (await a.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('checker', limited.secret) }))
        .body.access_token as string;
      const refused = await check('corp', token);
      expect(refused.status, refused.text).to.equal(403);
      expect(refused.text).to.include('only a writer that allow policies let do everything'); // its policy lets it post; the writer rule does not
      expect((await check('no-such-provider')).status).to.equal(404);
    });
  });

  it('gives a client that accepts only corp only sign-ins through corp', async () => {
    const email = await upstreamPerson();
    const browser = new TwoHostBrowser(a, b);
    expect((await browser.signIn('corp', email, PASSWORD)).status).to.equal(303);
    expect((await idToken(browser.atA, 'only-corp')).email).to.equal(email);
    // A password sign-in at A: only-corp asks for a sign-in again, offering corp alone.
    const local = `local-${randomBytes(3).toString('hex')}@example.com`;
    await a.json('POST', '/users', { email: local, password: PASSWORD }, await a.rootToken());
    const agent = new FormAgent(a);
    expect((await agent.signIn(local, PASSWORD)).status).to.equal(303);
    const res = await agent.get(
      `/auth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'only-corp', redirect_uri: RP.redirect, scope: 'openid', state: 's', code_challenge: 'x'.repeat(43), code_challenge_method: 'S256' })}`,
    );
    expect(res.status).to.equal(200);
    expect(res.text).to.include('Sign in with <bdi>Corp</bdi>');
    expect(res.text).to.not.include('Sign in with <bdi>Other</bdi>');
    expect(res.text).to.not.include('name="password"');
  });

  it('holds a request for an app to the ways the app accepts, whichever client asks', async () => {
    const root = await a.rootToken();
    const app = await a.json(
      'PUT',
      '/App/wiki',
      { urls: ['https://wiki.example'], signIn: { client: 'rp', identityProviders: ['corp'] } },
      root,
    );
    expect(app.status, app.text).to.be.oneOf([200, 201]);
    const local = `local-${randomBytes(3).toString('hex')}@example.com`;
    await a.json('POST', '/users', { email: local, password: PASSWORD }, root);
    const agent = new FormAgent(a);
    expect((await agent.signIn(local, PASSWORD)).status).to.equal(303);
    const ask = (resource?: string) =>
      agent.get(
        `/auth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'rp', redirect_uri: RP.redirect, scope: 'openid', state: 's', code_challenge: 'x'.repeat(43), code_challenge_method: 'S256', ...(resource ? { resource } : {}) })}`,
      );
    // For the wiki: a sign-in again, through corp only. For rp itself: the password sign-in will do.
    const forWiki = await ask('https://wiki.example');
    expect(forWiki.status).to.equal(200);
    expect(forWiki.text).to.include('Sign in with <bdi>Corp</bdi>');
    expect(forWiki.text).to.not.include('name="password"');
    expect((await ask()).status).to.equal(302);
    await a.json('DELETE', '/App/wiki', undefined, root);
  });

  it('links a provider from the account page, and unlinks it (audited), never the only way in', async () => {
    const email = await upstreamPerson();
    const otherEmail = `mine-${randomBytes(3).toString('hex')}@example.com`;
    await a.json('POST', '/users', { email: otherEmail, password: PASSWORD }, await a.rootToken());
    const browser = new TwoHostBrowser(a, b);
    expect((await browser.atA.signIn(otherEmail, PASSWORD)).status).to.equal(303);
    const linked = await browser.callback(await browser.atUpstream(await browser.start('other', '/auth/account', true), email, PASSWORD));
    expect(linked.status, linked.text).to.equal(303);
    expect(linked.headers.get('location')).to.equal('/auth/account?changed=provider-linked');
    // Now B's person signs in through `other` as the A person who linked it.
    const next = new TwoHostBrowser(a, b);
    expect((await next.signIn('other', email, PASSWORD)).status).to.equal(303);
    expect((await idToken(next.atA)).email).to.equal(otherEmail);
    // Unlinked: the next sign-in through `other` no longer reaches the person who linked it (it makes B's person one of A's).
    const page = await browser.atA.get('/auth/account');
    const unlinked = await browser.atA.post('/auth/account/providers/unlink', { csrf: hiddenFields(page.text).csrf!, provider: 'other' });
    expect(unlinked.status).to.equal(303);
    await eventually('the unlink audited', async () => /"event":"upstream".*"action":"unlinked"/.test(a.logs.join('\n')));
    const after = new TwoHostBrowser(a, b);
    expect((await after.signIn('other', email, PASSWORD)).status).to.equal(303);
    expect((await idToken(after.atA)).email).to.equal(email);
    // A person made by corp has no other way in: corp cannot be unlinked.
    const made = await upstreamPerson();
    const own = new TwoHostBrowser(a, b);
    expect((await own.signIn('corp', made, PASSWORD)).status).to.equal(303);
    const ownPage = await own.atA.get('/auth/account');
    const refused = await own.atA.post('/auth/account/providers/unlink', { csrf: hiddenFields(ownPage.text).csrf!, provider: 'corp' });
    expect(refused.status).to.equal(409);
  });

  it("lets an administrator see a person's identities and unlink one, even the only way in", async () => {
    const email = await upstreamPerson();
    expect((await new TwoHostBrowser(a, b).signIn('corp', email, PASSWORD)).status).to.equal(303);
    const person = await personAtA(email);
    const root = await a.rootToken();
    const listed = await a.json('GET', `/users/${person!.id}/identities`, undefined, root);
    expect(listed.status, listed.text).to.equal(200);
    expect(listed.body).to.have.length(1);
    expect(listed.body[0]).to.include({ provider: 'corp', email });
    // A stranger's token is refused like any /users request.
    expect((await a.json('GET', `/users/${person!.id}/identities`)).status).to.equal(401);
    expect((await a.json('DELETE', `/users/${person!.id}/identities/corp`, undefined, root)).status).to.equal(204);
    expect((await a.json('DELETE', `/users/${person!.id}/identities/corp`, undefined, root)).status).to.equal(404);
    expect((await a.json('GET', `/users/${person!.id}/identities`, undefined, root)).body).to.deep.equal([]);
    await eventually('the unlink audited', async () => /"action":"unlinked".*"by":\{"client"/.test(a.logs.join('\n')));
  });

  it("takes a provider's email only as an address: CR LF and a header, two addresses, 5,000 characters, a NUL are none", async () => {
    // A provider whose email claim is B's nickname, which B's people set to anything.
    await connectUpstream(
      a,
      b,
      'nicks',
      {
        displayName: 'Nicks',
        linking: { trustEmail: true },
        oidc: {
          issuer: b.url,
          clientId: 'nicks-client',
          scopes: ['openid', 'email', 'profile'],
          useUserinfo: true,
          claims: { email: 'nickname', emailVerified: 'email_verified' },
        },
      },
      'nicks-client',
    );
    const root = await b.rootToken();
    const withNickname = async (nickname: string): Promise<{ email: string; id: number }> => {
      const email = `n-${randomBytes(4).toString('hex')}@example.com`;
      const res = await b.json(
        'POST',
        '/users',
        { email, password: PASSWORD, email_verified: true, data: JSON.stringify({ nickname }) },
        root,
      );
      expect(res.status, res.text).to.equal(201);
      return { email, id: res.body.id };
    };
    const peopleAtA = async (): Promise<number> =>
      Number((await a.json('GET', '/users', undefined, await a.rootToken())).headers.get('x-total-count'));

    const before = await peopleAtA();
    const bad = {
      'a header': 'victim@example.com\r\nBcc: everyone@example.com',
      'two addresses': 'one@example.com, two@example.com',
      '5,000 characters': `${'a'.repeat(4988)}@example.com`,
      'a NUL': 'nul\u0000@example.com',
    };
    for (const [what, nickname] of Object.entries(bad)) {
      const { email } = await withNickname(nickname);
      const res = await new TwoHostBrowser(a, b).signIn('nicks', email, PASSWORD);
      expect(res.status, `${what}: ${res.text}`).to.equal(403);
      expect(res.text, what).to.include('Nicks gave an email address this box cannot use');
      expect(res.text, what).not.to.include('Bcc');
    }
    expect(await peopleAtA(), 'nobody made of an address that is none').to.equal(before);

    // An address is taken; a person linked by it still signs in once their provider sends a bad one.
    const good = `nick-${randomBytes(4).toString('hex')}@example.com`;
    const { email, id } = await withNickname(good);
    expect((await new TwoHostBrowser(a, b).signIn('nicks', email, PASSWORD)).status).to.equal(303);
    const person = await personAtA(good);
    expect(person, 'made at A with the address').to.not.equal(undefined);
    const changed = await b.json('PUT', `/users/${id}`, { data: JSON.stringify({ nickname: bad['a header'] }) }, root);
    expect(changed.status, changed.text).to.equal(200);
    expect((await new TwoHostBrowser(a, b).signIn('nicks', email, PASSWORD)).status).to.equal(303);
    const identities = await a.json('GET', `/users/${person!.id}/identities`, undefined, await a.rootToken());
    expect(identities.body[0]).to.include({ provider: 'nicks', email: null });
    expect(identities.text).not.to.include('Bcc');
  });

  it("an unlink signs out the browsers that identity signed in, and ends their grants; the person's other ways stay", async () => {
    await relyingParty(a, 'rp-refresh', { auth: { authorization_code: { redirect_uri: RP.redirect, refresh_token: true } } });
    /** A refresh token rp-refresh gets through `browser` (signed in at A). */
    const refreshTokenOf = async (browser: FormAgent): Promise<string> => {
      const verifier = randomBytes(32).toString('base64url');
      const query = new URLSearchParams({
        response_type: 'code',
        client_id: 'rp-refresh',
        redirect_uri: RP.redirect,
        scope: 'openid email',
        code_challenge: createHash('sha256').update(verifier).digest('base64url'),
        code_challenge_method: 'S256',
      });
      const authorized = await browser.get(`/auth/authorize?${query}`);
      expect(authorized.status, authorized.text).to.equal(302);
      const code = new URL(authorized.headers.get('location')!).searchParams.get('code')!;
      const tokens = await a.form(
        '/auth/token',
        { grant_type: 'authorization_code', code, redirect_uri: RP.redirect, code_verifier: verifier },
        { Authorization: basic('rp-refresh', RP.secret) },
      );
      expect(tokens.status, tokens.text).to.equal(200);
      return tokens.body.refresh_token as string;
    };
    const refresh = async (token: string): Promise<number> =>
      (
        await a.form(
          '/auth/token',
          { grant_type: 'refresh_token', refresh_token: token },
          { Authorization: basic('rp-refresh', RP.secret) },
        )
      ).status;
    const signedInAtA = async (browser: FormAgent): Promise<boolean> => (await browser.get('/auth/account')).status === 200;
    const throughCorp = async (email: string): Promise<FormAgent> => {
      const browser = new TwoHostBrowser(a, b);
      expect((await browser.signIn('corp', email, PASSWORD)).status).to.equal(303);
      return browser.atA;
    };

    // A person corp made, who has a password of A too (set before they sign in anywhere: it ends what came before).
    const email = await upstreamPerson();
    await throughCorp(email);
    const person = await personAtA(email);
    const root = await a.rootToken();
    expect((await a.json('PUT', `/users/${person!.id}`, { password: 'a-password-of-a-1' }, root)).status).to.equal(200);
    const [first, second] = [await throughCorp(email), await throughCorp(email)];
    const withPassword = new FormAgent(a);
    expect((await withPassword.signIn(email, 'a-password-of-a-1')).status).to.equal(303);
    const [corpGrant, passwordGrant] = [await refreshTokenOf(first), await refreshTokenOf(withPassword)];
    expect(await refresh(corpGrant)).to.equal(200);

    // The account taken over at corp: the administrator unlinks it.
    expect((await a.json('DELETE', `/users/${person!.id}/identities/corp`, undefined, root)).status).to.equal(204);
    expect(await signedInAtA(first), 'the first browser through corp').to.equal(false);
    expect(await signedInAtA(second), 'the second browser through corp').to.equal(false);
    expect(await refresh(corpGrant), 'the grant of a browser through corp').to.equal(400);
    expect(await signedInAtA(withPassword), 'the browser signed in with the password').to.equal(true);
    expect(await refresh(passwordGrant)).to.equal(200);
    await eventually('the grants closed, audited', async () => a.logs.some((l) => l.includes('"how":"unlinked"')));

    // Linked again from the account page, then unlinked there by the person: their other browsers through corp end, this one stays.
    const relink = new TwoHostBrowser(a, b, withPassword);
    const linked = await relink.callback(await relink.atUpstream(await relink.start('corp', '/auth/account', true), email, PASSWORD));
    expect(linked.headers.get('location')).to.equal('/auth/account?changed=provider-linked');
    const [here, elsewhere] = [await throughCorp(email), await throughCorp(email)];
    const page = await here.get('/auth/account');
    const unlinked = await here.post('/auth/account/providers/unlink', { csrf: hiddenFields(page.text).csrf!, provider: 'corp' });
    expect(unlinked.status, unlinked.text).to.equal(303);
    expect(await signedInAtA(elsewhere), 'another browser through corp').to.equal(false);
    expect(await signedInAtA(here), 'the browser the person unlinked at').to.equal(true);
    expect(await signedInAtA(withPassword)).to.equal(true);
  });

  it('signs out the browsers of a provider that is disabled, and forgets the links of one whose issuer changed', async () => {
    await connectUpstream(a, b, 'temp', { displayName: 'Temp' });
    const email = await upstreamPerson();
    const browser = new TwoHostBrowser(a, b);
    expect((await browser.signIn('temp', email, PASSWORD)).status).to.equal(303);
    expect((await browser.atA.get('/auth/account')).status).to.equal(200);
    const root = await a.rootToken();
    const stored = (await a.json('GET', '/IdentityProvider/temp', undefined, root)).body;
    const { meta: _meta, ...spec } = stored;
    expect((await a.json('PUT', '/IdentityProvider/temp', { ...spec, disabled: true }, root)).status).to.equal(200);
    expect((await browser.atA.get('/auth/account')).status, 'signed out with its provider').to.equal(303);
    // Another issuer, then B again: the identities linked before are forgotten (a subject is unique only at its issuer).
    expect((await a.json('PUT', '/IdentityProvider/temp', { ...spec, oidc: { ...spec.oidc, issuer: a.url } }, root)).status).to.equal(200);
    expect((await a.json('PUT', '/IdentityProvider/temp', spec, root)).status).to.equal(200);
    // Not linked any more, and temp is not trusted for emails: B's person no longer reaches the person temp made.
    expect((await new TwoHostBrowser(a, b).signIn('temp', email, PASSWORD)).status).to.equal(403);
  });

  it('refuses an upstream answer larger than a megabyte', async () => {
    const http = await import('node:http');
    const huge = http.createServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ issuer: 'x', padding: 'x'.repeat(2 * 1024 * 1024) }));
    });
    await new Promise<void>((r) => huge.listen(0, '127.0.0.1', r));
    const issuer = `http://127.0.0.1:${(huge.address() as net.AddressInfo).port}`;
    try {
      const res = await a.json('PUT', '/IdentityProvider/huge', { type: 'oidc', oidc: { issuer, clientId: 'x' } }, await a.rootToken());
      expect(res.status, res.text).to.be.oneOf([200, 201]);
      const browser = new FormAgent(a);
      const page = await browser.get('/auth/sign-in');
      const answer = await browser.post('/auth/upstream/huge/start', { csrf: hiddenFields(page.text).csrf!, return_to: '/auth/signed-in' });
      expect(answer.status).to.equal(502); // metadata that cannot be read: the provider's set-up, not the person's doing
      await eventually('the refusal logged', async () => a.logs.join('\n').includes('answered more than 1048576 bytes'));
    } finally {
      await a.json('DELETE', '/IdentityProvider/huge', undefined, await a.rootToken());
      huge.close();
    }
  });

  it('answers the sign-in page while an upstream never answers, and says the upstream is down', async () => {
    // A TCP server that accepts and never says a word: the upstream that hangs.
    const sockets: net.Socket[] = [];
    const silent = net.createServer((s) => sockets.push(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as net.AddressInfo).port;
    try {
      const res = await a.json(
        'PUT',
        '/IdentityProvider/silent',
        { type: 'oidc', oidc: { issuer: `http://127.0.0.1:${port}`, clientId: 'x' } },
        await a.rootToken(),
      );
      expect(res.status, res.text).to.be.oneOf([200, 201]);
      const browser = new FormAgent(a);
      const page = await browser.get('/auth/sign-in');
      let hanging = true;
      const answered = browser.post('/auth/upstream/silent/start', { csrf: hiddenFields(page.text).csrf!, return_to: '/auth/signed-in' });
      void answered.finally(() => (hanging = false));
      // Meanwhile other people's pages answer: no worker waits on the upstream.
      const pages = await Promise.all(Array.from({ length: 20 }, () => new FormAgent(a).get('/auth/sign-in')));
      expect(pages.every((p) => p.status === 200)).to.equal(true);
      expect(hanging, 'the sign-in pages answered while the upstream still hung').to.equal(true);
      const answer = await answered;
      expect(answer.status).to.equal(503);
      expect(answer.text).to.include('did not answer in time');
    } finally {
      await a.json('DELETE', '/IdentityProvider/silent', undefined, await a.rootToken());
      for (const s of sockets) s.destroy();
      silent.close();
    }
  });
});
