// People from a SAML 2.0 identity provider (issue 68, item 3): the test plays the identity
// provider (its own key, Responses signed with api/saml/sign.ts) and a person signs in to the box
// through it — made just in time, linked by the same rules as the OIDC upstreams, their groups
// mapped. Then what attackers try (item 4), each refused by its own check: a Response replayed
// (twenty at once: one wins), one answering another browser's request, one meant for another
// service provider (Destination, Recipient, Audience), out of its time, signed by another key or
// not at all, wrapped (XSW), a comment in a NameID, and metadata at a loopback address.
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { encryptAssertion } from '../../api/saml/encryption.js';
import { signSamlXml } from '../../api/saml/sign.js';
import { verifyRedirectSignature } from '../../api/saml/verify.js';
import { Box, eventually, type JsonResponse } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';
import { authnRequestOf, postResponse, samlKeyPair, startSaml, TestSamlIdp, type ResponseOptions } from '../support/saml-idp.js';
import { clientDocuments, type ClientDocuments } from '../support/client-documents.js';
import { testCa, type TestCa } from '../support/tls.js';
import { idTokenOf, relyingParty } from '../support/upstream.js';

describe('signing in through an upstream SAML identity provider', function () {
  this.timeout(180_000);
  let box: Box;
  const idp = new TestSamlIdp();

  before(async function () {
    box = await Box.start();
    await relyingParty(box, 'rp');
    await connect('corp', { linking: { trustEmail: true } });
  });
  after(async () => box?.stop());

  async function connect(id: string, more: Record<string, unknown> = {}, saml: Record<string, unknown> = {}): Promise<JsonResponse> {
    const res = await box.json(
      'PUT',
      `/IdentityProvider/${id}`,
      {
        type: 'saml',
        displayName: 'Corp SAML',
        saml: { entityId: idp.entityId, metadata: { xml: idp.metadataXml() }, emailVerified: true, ...saml },
        groups: [{ group: 'engineers', upstream: 'eng' }],
        ...more,
      },
      await box.rootToken(),
    );
    expect(res.status, res.text).to.be.oneOf([200, 201]);
    return res;
  }

  const newEmail = (): string => `p-${randomBytes(4).toString('hex')}@example.com`;

  /** A browser begins a sign-in at `provider`: it and the AuthnRequest's ID. */
  async function begin(provider = 'corp'): Promise<{ browser: FormAgent; requestId: string }> {
    const browser = new FormAgent(box);
    const { id } = authnRequestOf(await startSaml(browser, provider));
    return { browser, requestId: id };
  }

  /** A whole sign-in with the Response `o` makes (the request's ID filled in): the ACS's answer and the browser. */
  async function signIn(o: Omit<ResponseOptions, 'requestId'>, provider = 'corp'): Promise<{ answer: JsonResponse; browser: FormAgent }> {
    const { browser, requestId } = await begin(provider);
    const answer = await postResponse(browser, provider, idp.response(box, provider, { requestId, ...o }));
    return { answer, browser };
  }

  const signedInAs = async (browser: FormAgent): Promise<string | undefined> => {
    const claims = (await idTokenOf(box, browser, 'rp')).claims;
    return claims.email as string;
  };

  /** The sub the box gives the person of `email` (a password sign-in of theirs). */
  async function subjectOf(email: string): Promise<string> {
    const browser = new FormAgent(box);
    expect((await browser.signIn(email, 'a-good-password-1')).status).to.equal(303);
    return (await idTokenOf(box, browser, 'rp')).claims.sub as string;
  }

  const expectRefused = async ({ answer, browser }: { answer: JsonResponse; browser: FormAgent }): Promise<void> => {
    expect(answer.status, answer.text).to.equal(400);
    expect(answer.text).to.include('Not signed in');
    expect((await browser.get('/auth/account')).status, 'nobody signed in').to.equal(303);
  };

  it('sends a signed AuthnRequest by HTTP-Redirect, for the ACS, as the SP entity ID the SP metadata names', async () => {
    const metadata = await box.request('GET', '/auth/upstream/corp/saml/metadata');
    expect(metadata.status).to.equal(200);
    expect(metadata.headers.get('content-type')).to.match(/^application\/samlmetadata\+xml/);
    expect(metadata.text).to.include(`entityID="${box.url}/auth/upstream/corp/saml/metadata"`);
    expect(metadata.text).to.include(`Location="${box.url}/auth/upstream/corp/saml/acs"`);
    const certificate = /<ds:X509Certificate>([^<]+)</.exec(metadata.text)![1]!;
    const pem = `-----BEGIN CERTIFICATE-----\n${certificate.replace(/(.{64})/g, '$1\n')}\n-----END CERTIFICATE-----\n`;

    const request = authnRequestOf(await startSaml(new FormAgent(box), 'corp'));
    expect(request.url.origin + request.url.pathname).to.equal(idp.signOnUrl);
    expect(request.xml).to.include(`AssertionConsumerServiceURL="${box.url}/auth/upstream/corp/saml/acs"`);
    expect(request.xml).to.include(`<saml:Issuer>${box.url}/auth/upstream/corp/saml/metadata</saml:Issuer>`);
    expect(request.url.searchParams.get('SigAlg')).to.equal('http://www.w3.org/2001/04/xmldsig-more#rsa-sha256');
    expect(verifyRedirectSignature(request.url.search.slice(1), [pem]), 'signed with the key the SP metadata publishes').to.equal(true);
    expect(verifyRedirectSignature(request.url.search.slice(1), [idp.key.certificatePem])).to.equal(false);
  });

  it('makes a person of the box on a first sign-in, with the mapped groups only, and the same person next time', async () => {
    const email = newEmail();
    const attributes = { email: [email], name: ['Pat Person'], groups: ['eng', 'unmapped'] };
    const first = await signIn({ nameId: `id-${email}`, attributes });
    expect(first.answer.status, first.answer.text).to.equal(303);
    expect(first.answer.headers.get('location')).to.equal('/auth/signed-in');
    const claims = (await idTokenOf(box, first.browser, 'rp')).claims;
    expect(claims.email).to.equal(email);
    expect(claims.email_verified).to.equal(true);
    expect(claims.groups).to.deep.equal(['engineers']);
    // Next time, out of eng at the provider: the same person, out of engineers.
    const again = await signIn({ nameId: `id-${email}`, attributes: { ...attributes, groups: ['ops'] } });
    expect(again.answer.status, again.answer.text).to.equal(303);
    const next = (await idTokenOf(box, again.browser, 'rp')).claims;
    expect(next.sub).to.equal(claims.sub);
    expect(next.groups ?? []).to.deep.equal([]);
  });

  it("links to the box's person with the same proven email only where the provider is trusted for emails", async () => {
    const email = newEmail();
    const made = await box.json('POST', '/users', { email, password: 'a-good-password-1', email_verified: true }, await box.rootToken());
    expect(made.status, made.text).to.equal(201);
    await connect('untrusted');
    const refused = await signIn({ nameId: `u-${email}`, attributes: { email: [email] } }, 'untrusted');
    expect(refused.answer.status).to.equal(403);
    expect(refused.answer.text).to.include('Sign in the way you usually do');
    const linked = await signIn({ nameId: `t-${email}`, attributes: { email: [email] } });
    expect(linked.answer.status, linked.answer.text).to.equal(303);
    expect((await idTokenOf(box, linked.browser, 'rp')).claims.sub).to.equal(await subjectOf(email));
  });

  it("refuses a transient NameID as the provider's answer the box cannot keep anyone by, not as the box's fault", async () => {
    const email = newEmail();
    const { answer, browser } = await signIn({
      nameId: `t-${randomBytes(8).toString('hex')}`,
      nameIdFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:transient',
      attributes: { email: [email] },
    });
    expect(answer.status, answer.text).to.equal(400);
    expect(answer.text).to.include('Not signed in');
    expect(answer.text).to.include('changes at every sign-in');
    expect(answer.text).to.not.include('set-up');
    expect((await browser.get('/auth/account')).status, 'nobody signed in').to.equal(303);
  });

  it("answers a Response over the body limit on the box's page, whatever the browser's Accept", async () => {
    const { browser } = await begin();
    const answer = await browser.post('/auth/upstream/corp/saml/acs', { SAMLResponse: 'A'.repeat(300 * 1024) });
    expect(answer.status).to.equal(413);
    expect(answer.headers.get('content-type')).to.match(/^text\/html/);
  });

  it('refuses a replayed Response, and of twenty replays at once exactly one signs in', async () => {
    const email = newEmail();
    const { browser, requestId } = await begin();
    const response = idp.response(box, 'corp', { requestId, nameId: `r-${email}`, attributes: { email: [email] } });
    const cookies = browser.cookieHeader();
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        box.request('POST', '/auth/upstream/corp/saml/acs', {
          headers: { ...cookies, 'Content-Type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ SAMLResponse: response }).toString(),
        }),
      ),
    );
    const statuses = answers.map((a) => a.status);
    expect(
      statuses.filter((s) => s === 303),
      'one sign-in',
    ).to.have.length(1);
    // The others: refused, or told the box is busy (api/saml/xml.ts lets 18 documents wait for the schema at once).
    expect(
      statuses.filter((s) => s !== 303).every((s) => s === 400 || s === 503),
      statuses.join(' '),
    ).to.equal(true);
    // Later, from a browser that began a sign-in of its own: still nothing.
    const { browser: later } = await begin();
    await expectRefused({ answer: await postResponse(later, 'corp', response), browser: later });
  });

  it('refuses an Assertion ID used before, even in a Response to another request (the replay ledger)', async () => {
    const email = newEmail();
    const assertionId = `_a${randomBytes(12).toString('hex')}`;
    const first = await signIn({ nameId: `l-${email}`, attributes: { email: [email] }, assertionId });
    expect(first.answer.status, first.answer.text).to.equal(303);
    await expectRefused(await signIn({ nameId: `l-${email}`, attributes: { email: [email] }, assertionId }));
  });

  it('answers a request once: of five Responses to it (five Assertions) posted at once, one signs in', async () => {
    const email = newEmail();
    const { browser, requestId } = await begin();
    const o = { requestId, nameId: `o-${email}`, attributes: { email: [email] } };
    const cookies = browser.cookieHeader();
    const answers = await Promise.all(
      Array.from({ length: 5 }, () =>
        box.request('POST', '/auth/upstream/corp/saml/acs', {
          headers: { ...cookies, 'Content-Type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ SAMLResponse: idp.response(box, 'corp', o) }).toString(),
        }),
      ),
    );
    expect(answers.map((a) => a.status).sort()).to.deep.equal([303, 400, 400, 400, 400]);
  });

  it("refuses a Response to another browser's request (a login CSRF), and the victim's request is spent", async () => {
    const email = newEmail();
    const victim = await begin();
    const attacker = await begin();
    const response = idp.response(box, 'corp', { requestId: victim.requestId, nameId: `c-${email}`, attributes: { email: [email] } });
    await expectRefused({ answer: await postResponse(attacker.browser, 'corp', response), browser: attacker.browser });
    await expectRefused({ answer: await postResponse(victim.browser, 'corp', response), browser: victim.browser });
  });

  it('refuses a Response whose Assertion answers another request than the Response says', async () => {
    const other = await begin();
    await expectRefused(await signIn({ nameId: `x-${newEmail()}`, confirmationInResponseTo: other.requestId }));
  });

  it('refuses a Response meant for another service provider: Destination, Recipient, Audience', async () => {
    const nameId = `d-${newEmail()}`;
    await expectRefused(await signIn({ nameId, destination: 'https://other-sp.example/acs' }));
    await expectRefused(await signIn({ nameId, recipient: 'https://other-sp.example/acs' }));
    await expectRefused(await signIn({ nameId, audience: 'https://other-sp.example/metadata' }));
  });

  it('refuses an Assertion out of its time, beyond the two minutes of skew; within them it is taken', async () => {
    const nameId = `t-${newEmail()}`;
    await expectRefused(await signIn({ nameId, notBefore: -600, notOnOrAfter: -150 }));
    await expectRefused(await signIn({ nameId, notBefore: 150, notOnOrAfter: 600 }));
    await expectRefused(await signIn({ nameId, notOnOrAfter: 600, confirmationNotOnOrAfter: -150 }));
    const skewed = await signIn({ nameId, notBefore: 60, notOnOrAfter: 600, attributes: { email: [newEmail()] } });
    expect(skewed.answer.status, skewed.answer.text).to.equal(303);
  });

  it("refuses an Assertion signed by another identity provider's key, an unsigned one, and another issuer", async () => {
    const nameId = `k-${newEmail()}`;
    await expectRefused(await signIn({ nameId, signingKey: samlKeyPair('evil.example') }));
    await expectRefused(await signIn({ nameId, sign: 'none' }));
    await expectRefused(await signIn({ nameId, issuer: 'https://evil.example/idp' }));
  });

  it('signs nobody in with a wrapped Response (XSW: a forged Assertion beside the signed one)', async () => {
    const victim = newEmail();
    const attacker = newEmail();
    // The victim, a person of the box through this provider.
    expect((await signIn({ nameId: `w-${victim}`, attributes: { email: [victim] } })).answer.status).to.equal(303);
    const { browser, requestId } = await begin();
    const o = { requestId, nameId: `w-${attacker}`, attributes: { email: [attacker] } };
    const signed = signSamlXml(idp.assertionXml(box, 'corp', o), 'Assertion', idp.key);
    const forged = idp.assertionXml(box, 'corp', { ...o, nameId: `w-${victim}`, attributes: { email: [victim] } });
    const wrapped = idp.responseXml(box, 'corp', o, forged + signed);
    const answer = await postResponse(browser, 'corp', Buffer.from(wrapped).toString('base64'));
    await expectRefused({ answer, browser });
  });

  it('never reads a value cut by a comment: admin@…<!---->.evil.com neither links to nor signs in as admin@…', async () => {
    // The box's admin, linked to the provider by their proven email (corp is trusted for emails).
    const admin = `admin-${randomBytes(4).toString('hex')}@example.com`;
    const made = await box.json(
      'POST',
      '/users',
      { email: admin, password: 'a-good-password-1', email_verified: true },
      await box.rootToken(),
    );
    expect(made.status, made.text).to.equal(201);
    expect((await signIn({ nameId: admin, attributes: { email: [admin] } })).answer.status).to.equal(303);
    // The attacker's own account at the provider, admin@….evil.com, signed; a comment slipped in after signing
    // (exclusive c14n drops comments, so the signature still holds) into the NameID and the email.
    const { browser, requestId } = await begin();
    const evil = `${admin}.evil.com`;
    const xml = Buffer.from(idp.response(box, 'corp', { requestId, nameId: evil, attributes: { email: [evil] } }), 'base64')
      .toString()
      .replaceAll(`>${evil}<`, `>${admin}<!---->.evil.com<`);
    expect(xml).to.include(`${admin}<!---->.evil.com</saml:NameID>`);
    const answer = await postResponse(browser, 'corp', Buffer.from(xml).toString('base64'));
    // Read whole, as the signature covered it (api/saml/verify.ts re-parses the signed XML): the attacker, never admin.
    expect(answer.status, answer.text).to.equal(303);
    const claims = (await idTokenOf(box, browser, 'rp')).claims;
    expect(claims.email).to.equal(evil);
    expect(claims.sub).to.not.equal(await subjectOf(admin));
  });

  it('takes an Assertion encrypted to the certificate of its SP metadata (AES-256-GCM, RSA-OAEP)', async () => {
    const metadata = await box.request('GET', '/auth/upstream/corp/saml/metadata');
    const certificate = /<md:KeyDescriptor use="encryption">.*?<ds:X509Certificate>([^<]+)</.exec(metadata.text)![1]!;
    const pem = `-----BEGIN CERTIFICATE-----\n${certificate.replace(/(.{64})/g, '$1\n')}\n-----END CERTIFICATE-----\n`;
    const email = newEmail();
    const { browser, requestId } = await begin();
    const o = { requestId, nameId: `e-${email}`, attributes: { email: [email] } };
    const signed = signSamlXml(idp.assertionXml(box, 'corp', o), 'Assertion', idp.key);
    const encrypted = await encryptAssertion(signed, pem);
    const xml = idp.responseXml(box, 'corp', o, encrypted);
    expect(xml).to.include('EncryptedAssertion').and.not.include(email);
    const answer = await postResponse(browser, 'corp', Buffer.from(xml).toString('base64'));
    expect(answer.status, answer.text).to.equal(303);
    expect(await signedInAs(browser)).to.equal(email);
    // Keycloak's way: the Assertion unsigned and encrypted, the Response around it signed.
    const second = await begin();
    const o2 = { ...o, requestId: second.requestId };
    const inner = await encryptAssertion(idp.assertionXml(box, 'corp', o2), pem);
    const signedResponse = signSamlXml(idp.responseXml(box, 'corp', o2, inner), 'Response', idp.key);
    const again = await postResponse(second.browser, 'corp', Buffer.from(signedResponse).toString('base64'));
    expect(again.status, again.text).to.equal(303);
    expect(await signedInAs(second.browser)).to.equal(email);
    // And unsigned all through: refused.
    const third = await begin();
    const o3 = { ...o, requestId: third.requestId };
    const unsigned = idp.responseXml(box, 'corp', o3, await encryptAssertion(idp.assertionXml(box, 'corp', o3), pem));
    await expectRefused({
      answer: await postResponse(third.browser, 'corp', Buffer.from(unsigned).toString('base64')),
      browser: third.browser,
    });
  });

  it('refuses an IdP-initiated (unsolicited) Response', async () => {
    const browser = new FormAgent(box);
    await startSaml(browser, 'corp');
    const response = Buffer.from(
      Buffer.from(idp.response(box, 'corp', { requestId: '_unsolicited', nameId: `u-${newEmail()}` }), 'base64')
        .toString()
        .replace(/ InResponseTo="_unsolicited"/g, ''),
    ).toString('base64');
    await expectRefused({ answer: await postResponse(browser, 'corp', response), browser });
  });

  it("posts the Response once more from the box's own page when the IdP's cross-site POST carried no cookie", async () => {
    const email = newEmail();
    const { browser, requestId } = await begin();
    const response = idp.response(box, 'corp', { requestId, nameId: `b-${email}`, attributes: { email: [email] } });
    // A browser that keeps SameSite=Lax cookies from the IdP's POST: the box's page posts it again.
    const bounced = await box.request('POST', '/auth/upstream/corp/saml/acs', {
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ SAMLResponse: response }).toString(),
    });
    expect(bounced.status).to.equal(200);
    expect(bounced.text).to.include('action="/auth/upstream/corp/saml/acs"').and.include('name="bounced" value="1"');
    const answer = await browser.post('/auth/upstream/corp/saml/acs', { SAMLResponse: response, bounced: '1' });
    expect(answer.status, answer.text).to.equal(303);
    expect(await signedInAs(browser)).to.equal(email);
  });

  it("follows the box's key rotation: the SP metadata names both keys, the new one signs, the old one still decrypts", async () => {
    const certificatesOf = (xml: string, use: string): string[] =>
      [...xml.matchAll(new RegExp(`<md:KeyDescriptor use="${use}">.*?<ds:X509Certificate>([^<]+)<`, 'g'))].map(
        (m) => `-----BEGIN CERTIFICATE-----\n${m[1]!.replace(/(.{64})/g, '$1\n')}\n-----END CERTIFICATE-----\n`,
      );
    const before = (await box.request('GET', '/auth/upstream/corp/saml/metadata')).text;
    const [old] = certificatesOf(before, 'encryption');
    const rotated = await box.json('POST', '/keys/rotate', { alg: 'RS256' }, await box.rootToken());
    expect(rotated.status, rotated.text).to.equal(200);
    const after = await eventually('the new key published', async () => {
      const xml = (await box.request('GET', '/auth/upstream/corp/saml/metadata')).text;
      return certificatesOf(xml, 'signing').length === 2 && xml;
    });
    const [fresh, retired] = certificatesOf(after, 'signing');
    expect(retired).to.equal(old);
    const request = authnRequestOf(await startSaml(new FormAgent(box), 'corp'));
    expect(verifyRedirectSignature(request.url.search.slice(1), [fresh!]), 'signed with the new key').to.equal(true);
    // An IdP that still encrypts to the key before.
    const email = newEmail();
    const { browser, requestId } = await begin();
    const o = { requestId, nameId: `k-${email}`, attributes: { email: [email] } };
    const encrypted = await encryptAssertion(signSamlXml(idp.assertionXml(box, 'corp', o), 'Assertion', idp.key), old!);
    const answer = await postResponse(browser, 'corp', Buffer.from(idp.responseXml(box, 'corp', o, encrypted)).toString('base64'));
    expect(answer.status, answer.text).to.equal(303);
    expect(await signedInAs(browser)).to.equal(email);
  });
});

describe('the metadata of an upstream SAML identity provider at a URL', function () {
  this.timeout(180_000);
  let ca: TestCa;
  let server: ClientDocuments;
  /** A box as in production: it never fetches from a loopback address. */
  let strict: Box;
  /** A box for development, allowed to (BOXAUTH_CLIENT_METADATA_ALLOWED_ADDRESSES). */
  let dev: Box;
  const idp = new TestSamlIdp();

  before(async function () {
    ca = testCa();
    server = await clientDocuments(ca);
    server.serve('/metadata', { body: idp.metadataXml(), headers: { 'Content-Type': 'application/samlmetadata+xml' } });
    const env = { NODE_EXTRA_CA_CERTS: ca.caFile };
    [strict, dev] = await Promise.all([
      Box.start({ env }),
      Box.start({ env: { ...env, BOXAUTH_CLIENT_METADATA_ALLOWED_ADDRESSES: '127.0.0.1/32, ::1/128' } }),
    ]);
    await relyingParty(dev, 'rp');
    for (const box of [strict, dev]) {
      const res = await box.json(
        'PUT',
        '/IdentityProvider/remote',
        { type: 'saml', saml: { entityId: idp.entityId, metadata: { url: `${server.origin}/metadata` } } },
        await box.rootToken(),
      );
      expect(res.status, res.text).to.equal(201);
    }
  });
  after(async () => Promise.all([strict?.stop(), dev?.stop(), server?.close()]));

  it('is never fetched from a loopback address by a box that does not allow it: its set-up fault, said to the admin', async () => {
    const answer = await startSaml(new FormAgent(strict), 'remote');
    expect(answer.status, answer.text).to.equal(502);
    const check = await strict.json('POST', '/IdentityProvider/remote/$check', undefined, await strict.rootToken());
    expect(check.body.ok).to.equal(false);
    expect(JSON.stringify(check.body)).to.match(/special-use|the box's own address/);
    const refusedHere = (l: string): boolean => l.includes('"provider":"remote"') && /special-use|the box's own address/.test(l);
    await eventually('the cause logged', async () => strict.logs.some(refusedHere));
    expect(server.hits('/metadata'), 'never asked').to.equal(0);
  });

  it('is read from its URL where allowed, and a person signs in through it', async () => {
    const check = await dev.json('POST', '/IdentityProvider/remote/$check', undefined, await dev.rootToken());
    expect(check.body.ok, JSON.stringify(check.body)).to.equal(true);
    const browser = new FormAgent(dev);
    const { id } = authnRequestOf(await startSaml(browser, 'remote'));
    const email = `m-${randomBytes(4).toString('hex')}@example.com`;
    const answer = await postResponse(
      browser,
      'remote',
      idp.response(dev, 'remote', { requestId: id, nameId: email, attributes: { mail: [email] } }),
    );
    expect(answer.status, answer.text).to.equal(303);
    expect((await idTokenOf(dev, browser, 'rp')).claims.email).to.equal(email);
    expect(server.hits('/metadata'), 'read once, then kept').to.equal(1);
  });

  it('tells the admin a server that fails it (unavailable) from a document the box refuses (misconfigured)', async () => {
    server.serve('/metadata-down', { status: 503, body: 'busy' });
    server.serve('/metadata-html', { body: '<html></html>', headers: { 'Content-Type': 'text/html' } });
    const token = await dev.rootToken();
    const detailOf = async (id: string, path: string): Promise<string> => {
      const put = await dev.json(
        'PUT',
        `/IdentityProvider/${id}`,
        { type: 'saml', saml: { entityId: idp.entityId, metadata: { url: `${server.origin}${path}` } } },
        token,
      );
      expect(put.status, put.text).to.equal(201);
      const check = await dev.json('POST', `/IdentityProvider/${id}/$check`, undefined, token);
      expect(check.body.ok).to.equal(false);
      return (check.body.checks as { detail: string }[])[0]!.detail;
    };
    expect(await detailOf('remote-down', '/metadata-down')).to.match(/^unavailable: .*503/);
    expect(await detailOf('remote-html', '/metadata-html')).to.match(/^misconfigured: .*text\/html, not XML/);
  });
});
