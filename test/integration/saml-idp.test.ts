// The box as a SAML 2.0 identity provider (docs/guides/saml-apps.md), as an SP and a browser see
// it: the IdP metadata signed with a certificate it publishes; a sign-in an SP starts by
// HTTP-Redirect and by HTTP-POST, through the box's own sign-in page, ending in a Response the SP
// checks with the box's certificate (A1's verifiedResponse); and the attacks: a consumer service
// not in the metadata, an unknown Issuer, an IdP-initiated
// sign-in to an app that did not allow it, a person the app's policies do not admit, a signed
// AuthnRequest changed after it was signed.
import { expect } from 'chai';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { SignedXml } from 'xml-crypto';
import { Box, eventually, type JsonResponse } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { idpCertificates } from '../support/saml.js';
import { encodeRedirectMessage } from '../../api/saml/bindings.js';
import { decryptAssertions } from '../../api/saml/encryption.js';
import { selfSignedCertificate, certificateBody } from '../../api/saml/certificate.js';
import { signRedirectQuery, signSamlXml } from '../../api/saml/sign.js';
import { verifiedResponse } from '../../api/saml/verify.js';
import { childElements, readSamlXml, SAML_NS, textOf } from '../../api/saml/xml.js';

const ANN = { email: 'ann@example.com', password: 'ann-password-1' };
const SP = 'https://sp.example/saml';
const ACS = 'https://sp.example/saml/acs';

const spKeys = generateKeyPairSync('rsa', { modulusLength: 2048 });
const spCert = selfSignedCertificate(spKeys, 'sp.example', new Date('2026-01-01T00:00:00Z'), new Date('2030-01-01T00:00:00Z'));
const spKey = { privateKey: spKeys.privateKey, certificatePem: spCert };

const SLO = 'https://sp.example/saml/slo';

const spMetadata = (entityId: string, signed = false, use = ' use="signing"'): string =>
  `<md:EntityDescriptor xmlns:md="${SAML_NS.metadata}" xmlns:ds="${SAML_NS.dsig}" entityID="${entityId}">` +
  `<md:SPSSODescriptor AuthnRequestsSigned="${signed}" protocolSupportEnumeration="${SAML_NS.protocol}">` +
  `<md:KeyDescriptor${use}><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${certificateBody(spCert)}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>` +
  `<md:SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${SLO}"/>` +
  `<md:AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${ACS}" index="0" isDefault="true"/>` +
  '</md:SPSSODescriptor></md:EntityDescriptor>';

function authnRequest(issuer: string, more: { acs?: string; id?: string; passive?: boolean; context?: string } = {}): string {
  return (
    `<samlp:AuthnRequest xmlns:samlp="${SAML_NS.protocol}" xmlns:saml="${SAML_NS.assertion}" ID="${more.id ?? `_${randomBytes(8).toString('hex')}`}" ` +
    `Version="2.0" IssueInstant="${new Date().toISOString()}" AssertionConsumerServiceURL="${more.acs ?? ACS}"${more.passive ? ' IsPassive="true"' : ''}>` +
    `<saml:Issuer>${issuer}</saml:Issuer>` +
    (more.context
      ? `<samlp:RequestedAuthnContext Comparison="minimum"><saml:AuthnContextClassRef>${more.context}</saml:AuthnContextClassRef></samlp:RequestedAuthnContext>`
      : '') +
    '</samlp:AuthnRequest>'
  );
}

function logoutRequest(issuer: string, nameId: string, sessionIndex: string): string {
  return (
    `<samlp:LogoutRequest xmlns:samlp="${SAML_NS.protocol}" xmlns:saml="${SAML_NS.assertion}" ID="_${randomBytes(8).toString('hex')}" ` +
    `Version="2.0" IssueInstant="${new Date().toISOString()}"><saml:Issuer>${issuer}</saml:Issuer>` +
    `<saml:NameID Format="urn:oasis:names:tc:SAML:2.0:nameid-format:persistent">${nameId}</saml:NameID>` +
    `<samlp:SessionIndex>${sessionIndex}</samlp:SessionIndex></samlp:LogoutRequest>`
  );
}

const redirectPath = (path: string, xml: string): string => `${path}?SAMLRequest=${encodeURIComponent(encodeRedirectMessage(xml))}`;

/**
 * An app's page posting an AuthnRequest (HTTP-POST), and the browser following the box's redirect to
 * its own GET: the POST comes from another site, with none of the box's cookies (SameSite=Lax).
 */
async function postSso(browser: FormAgent, fields: Record<string, string>): Promise<JsonResponse> {
  const posted = await browser.post('/auth/saml/sso', fields);
  return posted.status === 303 ? browser.get(posted.headers.get('location')!) : posted;
}

/** The form a page posts itself with: where and what. */
function postedForm(res: JsonResponse): { action: string; fields: Record<string, string> } | undefined {
  const form = /<form method="post" action="([^"]*)" id="form-post">([\s\S]*?)<\/form>/.exec(res.text);
  return form ? { action: form[1]!.replace(/&amp;/g, '&'), fields: hiddenFields(form[2]!) } : undefined;
}

describe('SAML IdP (Client.saml)', function () {
  this.timeout(60_000);
  let box: Box;
  let root: string;

  before(async function () {
    box = await Box.start({ env: { BOXAUTH_SIGN_IN_MAX_FAILURES: '1000' } });
    root = await box.rootToken();
    const editors = (await box.json('POST', '/groups', { name: 'wiki-editors' }, root)).body.id;
    expect((await box.json('POST', '/users', { ...ANN, 'group-ids': [editors] }, root)).status).to.equal(201);
    for (const [id, saml] of Object.entries({
      wiki: { metadata: { xml: spMetadata(SP) } },
      signing: { metadata: { xml: spMetadata('https://signing.example/saml', true) } },
      closed: { metadata: { xml: spMetadata('https://closed.example/saml') } },
      sealed: { metadata: { xml: spMetadata('https://sealed.example/saml', false, '') }, encryptAssertions: true },
      asks: { metadata: { xml: spMetadata('https://asks.example/saml') } },
      mail: { metadata: { xml: spMetadata('https://mail.example/saml') }, nameIdFormat: 'emailAddress' },
    })) {
      const claims = { roles: 'user.groups.filter(g, g.startsWith("wiki-")).map(g, g.substring(5))' };
      const res = await box.json('PUT', `/Client/${id}`, { grant_types: [], first_party: id !== 'asks', saml, claims }, root);
      expect(res.status, res.text).to.equal(201);
    }
    for (const id of ['wiki', 'signing', 'sealed', 'asks', 'mail'])
      expect(
        (await box.json('PUT', `/AccessPolicy/${id}-people`, { engine: 'allow', link: [{ id, resourceType: 'Client' }] }, root)).status,
      ).to.equal(201);
  });
  after(async function () {
    await box?.stop();
  });

  /** A browser signed in as Ann. */
  async function signedIn(): Promise<FormAgent> {
    const browser = new FormAgent(box);
    expect((await browser.signIn(ANN.email, ANN.password)).status).to.equal(303);
    return browser;
  }

  /** The Response posted to the SP, checked as an SP checks it: the assertion the signature covers. */
  async function checkedAssertion(res: JsonResponse, requestId: string, audienceOf = SP) {
    const form = postedForm(res);
    expect(form, res.text.slice(0, 500)).to.not.equal(undefined);
    expect(form!.action).to.equal(ACS);
    const xml = Buffer.from(form!.fields.SAMLResponse!, 'base64').toString('utf8');
    // As an SP does: an encrypted assertion opened with its key (A2's decryptAssertions), then the
    // signatures checked, the Response's over what arrived (A1's verifiedResponse).
    const arrived = await readSamlXml(xml, 'protocol');
    const doc = xml.includes('EncryptedAssertion')
      ? await decryptAssertions(await readSamlXml(xml, 'protocol'), spKeys.privateKey)
      : arrived;
    const verified = verifiedResponse(doc, await idpCertificates(box), arrived);
    expect(verified.response.getAttribute('InResponseTo')).to.equal(requestId);
    expect(verified.response.getAttribute('Destination')).to.equal(ACS);
    const a = verified.assertion;
    const audience = a.getElementsByTagNameNS(SAML_NS.assertion, 'Audience')[0]!;
    expect(textOf(audience)).to.equal(audienceOf);
    const confirmation = a.getElementsByTagNameNS(SAML_NS.assertion, 'SubjectConfirmationData')[0]!;
    expect(confirmation.getAttribute('Recipient')).to.equal(ACS);
    expect(confirmation.getAttribute('InResponseTo')).to.equal(requestId);
    const nameId = a.getElementsByTagNameNS(SAML_NS.assertion, 'NameID')[0]!;
    expect(nameId.getAttribute('Format')).to.equal('urn:oasis:names:tc:SAML:2.0:nameid-format:persistent');
    expect(textOf(nameId)).to.match(/^[A-Za-z0-9_-]{22}$/);
    expect(a.getElementsByTagNameNS(SAML_NS.assertion, 'AuthnContextClassRef')[0]!.textContent).to.equal(
      'urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport',
    );
    return { form: form!, assertion: a };
  }

  it('serves its metadata, signed with a certificate it publishes', async function () {
    const res = await box.request('GET', '/auth/saml/metadata');
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^application\/samlmetadata\+xml/);
    const [cert] = await idpCertificates(box);
    const doc = await readSamlXml(res.text, 'metadata');
    expect(doc.documentElement.getAttribute('entityID')).to.equal(`${box.url}/auth/saml/metadata`);
    const signature = childElements(doc.documentElement, SAML_NS.dsig, 'Signature')[0]!;
    const verifier = new SignedXml({ publicCert: cert! });
    verifier.loadSignature(signature);
    expect(verifier.checkSignature(res.text)).to.equal(true);
    const tampered = res.text.replace(`${box.url}/auth/saml/sso`, 'https://evil.example/sso');
    const again = new SignedXml({ publicCert: cert! });
    again.loadSignature(signature);
    expect(
      () =>
        again.checkSignature(tampered) ||
        (() => {
          throw new Error('not valid');
        })(),
    ).to.throw();
  });

  it('signs a person in for an SP over HTTP-Redirect, through the sign-in page', async function () {
    const browser = new FormAgent(box);
    const id = '_redirect1';
    const page = await browser.get(
      `/auth/saml/sso?SAMLRequest=${encodeURIComponent(encodeRedirectMessage(authnRequest(SP, { id })))}&RelayState=there`,
    );
    expect(page.status, page.text.slice(0, 300)).to.equal(200);
    const returnTo = hiddenFields(page.text).return_to!;
    expect(returnTo).to.match(/^\/auth\/saml\/sso\?resume=/);
    const signedIn = await browser.post('/auth/sign-in', { ...hiddenFields(page.text), email: ANN.email, password: ANN.password });
    expect(signedIn.status).to.equal(303);
    expect(signedIn.headers.get('location')).to.equal(returnTo);
    const { form, assertion } = await checkedAssertion(await browser.get(returnTo), id);
    expect(form.fields.RelayState).to.equal('there');
    const statement = childElements(assertion, SAML_NS.assertion, 'AttributeStatement')[0]!;
    const values = Object.fromEntries(
      childElements(statement, SAML_NS.assertion, 'Attribute').map((a) => [
        a.getAttribute('Name'),
        childElements(a, SAML_NS.assertion, 'AttributeValue').map((v) => textOf(v)),
      ]),
    );
    // The claims the client shapes with CEL, as for OpenID Connect, the person's groups, and their address (proven: an admin entered it).
    expect(values).to.deep.equal({ roles: ['editors'], email: [ANN.email], groups: ['wiki-editors'] });
  });

  it("signs a person in for an SP over HTTP-POST, the POST sent without the box's cookies as another site's page sends it", async function () {
    const browser = await signedIn();
    // The app's page posts from another site: the browser sends none of the box's SameSite=Lax cookies with it.
    const posted = await new FormAgent(box).post('/auth/saml/sso', {
      SAMLRequest: Buffer.from(authnRequest(SP, { id: '_post1' })).toString('base64'),
    });
    expect(posted.status).to.equal(303);
    expect(posted.headers.get('location')).to.match(/^\/auth\/saml\/sso\?resume=/);
    // The redirect to the box's own GET is followed with them: the person signed in gets the assertion at once.
    await checkedAssertion(await browser.get(posted.headers.get('location')!), '_post1');
  });

  it('refuses an AuthnRequest whose consumer service is not in the metadata, on its own page', async function () {
    const browser = await signedIn();
    const res = await browser.get(
      `/auth/saml/sso?SAMLRequest=${encodeURIComponent(encodeRedirectMessage(authnRequest(SP, { acs: 'https://evil.example/acs' })))}`,
    );
    expect(res.status).to.equal(400);
    expect(postedForm(res)).to.equal(undefined);
    expect(res.text).to.include('AssertionConsumerServiceURL');
  });

  it('refuses an AuthnRequest of an Issuer it does not know', async function () {
    const browser = await signedIn();
    const res = await browser.get(
      `/auth/saml/sso?SAMLRequest=${encodeURIComponent(encodeRedirectMessage(authnRequest('https://stranger.example/saml')))}`,
    );
    expect(res.status).to.equal(400);
    expect(postedForm(res)).to.equal(undefined);
  });

  it('refuses an IdP-initiated sign-in to an app that did not allow it', async function () {
    const browser = await signedIn();
    const res = await browser.get(`/auth/saml/sso?sp=${encodeURIComponent(SP)}`);
    expect(res.status).to.equal(400);
    expect(res.text).to.include('idpInitiated');
    expect(postedForm(res)).to.equal(undefined);
  });

  it("answers a message over the box's size limits on its own page, whatever the sender's Accept", async function () {
    // No Accept header, as an SP library's redirect or an HTTP client sends it: the browser is shown a page, never JSON.
    const browser = await signedIn();
    const padded = authnRequest(SP).replace(
      '</samlp:AuthnRequest>',
      `<!-- ${randomBytes(6000).toString('base64')} --></samlp:AuthnRequest>`,
    );
    const long = await browser.get(`/auth/saml/sso?SAMLRequest=${encodeURIComponent(Buffer.from(padded).toString('base64'))}`);
    expect(long.status).to.equal(400);
    expect(long.headers.get('content-type')).to.match(/^text\/html/);
    expect(long.text).to.include('SAMLRequest');
    const large = await browser.post('/auth/saml/sso', { SAMLRequest: 'A'.repeat(300 * 1024) });
    expect(large.status).to.equal(413);
    expect(large.headers.get('content-type')).to.match(/^text\/html/);
    expect(postedForm(large)).to.equal(undefined);
  });

  it('signs nobody in to two apps naming one entity ID, and names neither app to the sender', async function () {
    const twins = 'https://twins.example/saml';
    for (const id of ['twin-app-7q3', 'twin-app-9k2'])
      expect(
        (await box.json('PUT', `/Client/${id}`, { grant_types: [], saml: { metadata: { xml: spMetadata(twins) } } }, root)).status,
      ).to.equal(201);
    try {
      const res = await new FormAgent(box).get(redirectPath('/auth/saml/sso', authnRequest(twins)));
      expect(res.status).to.equal(400);
      expect(postedForm(res)).to.equal(undefined);
      expect(res.text).to.include('entity ID');
      expect(res.text).to.not.include('twin-app-7q3');
      expect(res.text).to.not.include('twin-app-9k2');
      // The box's own log names them, for whoever keeps the box.
      const both = /twin-app-7q3[^\n]*twin-app-9k2|twin-app-9k2[^\n]*twin-app-7q3/;
      await eventually('the log names both apps', async () => both.test(box.logs.join('\n')) || undefined);
    } finally {
      for (const id of ['twin-app-7q3', 'twin-app-9k2']) await box.json('DELETE', `/Client/${id}`, undefined, root);
    }
  });

  it("gives no assertion to a person the app's policies do not admit", async function () {
    const browser = await signedIn();
    const res = await postSso(browser, {
      SAMLRequest: Buffer.from(authnRequest('https://closed.example/saml', { acs: ACS })).toString('base64'),
    });
    expect(res.status).to.equal(403);
    expect(postedForm(res)).to.equal(undefined);
    expect(res.text).to.not.include('SAMLResponse');
  });

  it('checks a signed AuthnRequest, and refuses one changed after it was signed or not signed at all', async function () {
    const browser = await signedIn();
    const issuer = 'https://signing.example/saml';
    const query = signRedirectQuery(
      { SAMLRequest: encodeRedirectMessage(authnRequest(issuer, { id: '_signed1' })), RelayState: 'a' },
      spKey,
    );
    const good = await browser.get(`/auth/saml/sso?${query}`);
    expect(postedForm(good), good.text.slice(0, 400)).to.not.equal(undefined);
    const tampered = await browser.get(`/auth/saml/sso?${query.replace('RelayState=a', 'RelayState=b')}`);
    expect(tampered.status).to.equal(400);
    expect(postedForm(tampered)).to.equal(undefined);
    const unsigned = await browser.get(`/auth/saml/sso?SAMLRequest=${encodeURIComponent(encodeRedirectMessage(authnRequest(issuer)))}`);
    expect(unsigned.status).to.equal(400);
  });

  it('checks an AuthnRequest signed inside the XML (HTTP-POST), and refuses one changed after it was signed', async function () {
    const browser = await signedIn();
    const signed = signSamlXml(authnRequest('https://signing.example/saml', { id: '_postsigned' }), 'AuthnRequest', spKey);
    const good = await postSso(browser, { SAMLRequest: Buffer.from(signed).toString('base64') });
    expect(postedForm(good), good.text.slice(0, 400)).to.not.equal(undefined);
    const changed = signed.replace('ID="_postsigned"', 'ID="_postsigned" ForceAuthn="false"');
    expect(changed).to.not.equal(signed);
    const tampered = await postSso(browser, { SAMLRequest: Buffer.from(changed).toString('base64') });
    expect(tampered.status).to.equal(400);
    expect(postedForm(tampered)).to.equal(undefined);
  });

  it('answers a NameIDPolicy the app is not given with InvalidNameIDPolicy, and emailAddress with the proven address', async function () {
    const browser = await signedIn();
    const transient = authnRequest(SP, { id: '_transient' }).replace(
      '</saml:Issuer>',
      '</saml:Issuer><samlp:NameIDPolicy Format="urn:oasis:names:tc:SAML:2.0:nameid-format:transient"/>',
    );
    const refused = await postSso(browser, { SAMLRequest: Buffer.from(transient).toString('base64') });
    const refusedXml = Buffer.from(postedForm(refused)!.fields.SAMLResponse!, 'base64').toString('utf8');
    expect(refusedXml).to.include('urn:oasis:names:tc:SAML:2.0:status:InvalidNameIDPolicy');
    expect(refusedXml).to.not.include('Assertion');

    const res = await postSso(browser, {
      SAMLRequest: Buffer.from(authnRequest('https://mail.example/saml', { id: '_mail' })).toString('base64'),
    });
    const xml = Buffer.from(postedForm(res)!.fields.SAMLResponse!, 'base64').toString('utf8');
    expect(xml).to.include(`Format="urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress">${ANN.email}</saml:NameID>`);
  });

  it('offers only the ways of signing in the app accepts (Client.identityProviders)', async function () {
    const saml = { metadata: { xml: spMetadata('https://corp-only.example/saml') } };
    const put = await box.json('PUT', '/Client/corp-only', { grant_types: [], first_party: true, saml, identityProviders: ['corp'] }, root);
    expect(put.status, put.text).to.equal(201);
    const browser = new FormAgent(box);
    const page = await postSso(browser, { SAMLRequest: Buffer.from(authnRequest('https://corp-only.example/saml')).toString('base64') });
    expect(page.status).to.equal(200);
    expect(page.text).to.not.include('name="password"');
    const open = await browser.get(`/auth/sign-in?return_to=${encodeURIComponent('/auth/signed-in')}`);
    expect(open.text, "the box's own form where every way is accepted").to.include('name="password"');
  });

  it('encrypts the assertion to the SP when its Client asks (encryptAssertions)', async function () {
    const browser = await signedIn();
    const res = await postSso(browser, {
      SAMLRequest: Buffer.from(authnRequest('https://sealed.example/saml', { id: '_sealed1' })).toString('base64'),
    });
    const xml = Buffer.from(postedForm(res)!.fields.SAMLResponse!, 'base64').toString('utf8');
    expect(xml).to.include('EncryptedAssertion');
    expect(xml).to.not.include(ANN.email);
    await checkedAssertion(res, '_sealed1', 'https://sealed.example/saml');
  });

  it('asks for consent where the app needs it, then answers', async function () {
    const browser = await signedIn();
    const page = await postSso(browser, {
      SAMLRequest: Buffer.from(authnRequest('https://asks.example/saml', { id: '_asks1' })).toString('base64'),
    });
    expect(page.status).to.equal(200);
    expect(page.text).to.include('action="/auth/saml/consent"');
    const denied = await browser.post('/auth/saml/consent', { ...hiddenFields(page.text), decision: 'deny' });
    const deniedXml = Buffer.from(postedForm(denied)!.fields.SAMLResponse!, 'base64').toString('utf8');
    expect(deniedXml).to.include('RequestDenied');
    expect(deniedXml).to.not.include('Assertion');
    const allowed = await browser.post('/auth/saml/consent', { ...hiddenFields(page.text), decision: 'allow' });
    await checkedAssertion(allowed, '_asks1', 'https://asks.example/saml');
  });

  it('answers IsPassive without a sign-in with NoPassive, never a page', async function () {
    const res = await postSso(new FormAgent(box), {
      SAMLRequest: Buffer.from(authnRequest(SP, { id: '_passive1', passive: true })).toString('base64'),
    });
    const xml = Buffer.from(postedForm(res)!.fields.SAMLResponse!, 'base64').toString('utf8');
    expect(xml).to.include('urn:oasis:names:tc:SAML:2.0:status:NoPassive');
    expect(xml).to.not.include('Assertion');
  });

  it('honours RequestedAuthnContext by a step-up, not an assertion of a weaker sign-in', async function () {
    const browser = await signedIn();
    const res = await postSso(browser, {
      SAMLRequest: Buffer.from(authnRequest(SP, { id: '_mfa1', context: 'https://refeds.org/profile/mfa' })).toString('base64'),
    });
    expect(postedForm(res)).to.equal(undefined);
    expect(res.status).to.be.oneOf([200, 303]);
    expect(res.text).to.not.include('SAMLResponse');
  });

  it('lists the old and the new certificate while a rotated RS256 key is still published, and signs with the new', async function () {
    const before = await idpCertificates(box);
    expect((await box.json('POST', '/keys/rotate', { alg: 'RS256' }, root)).status).to.equal(200);
    const after = await idpCertificates(box);
    expect(after).to.have.length(before.length + 1);
    expect(after).to.include.members(before);
    const browser = await signedIn();
    const res = await postSso(browser, { SAMLRequest: Buffer.from(authnRequest(SP, { id: '_rotated' })).toString('base64') });
    const doc = await readSamlXml(Buffer.from(postedForm(res)!.fields.SAMLResponse!, 'base64').toString('utf8'), 'protocol');
    expect(() => verifiedResponse(doc, before)).to.throw();
    expect(() =>
      verifiedResponse(
        doc,
        after.filter((c) => !before.includes(c)),
      ),
    ).to.not.throw();
  });

  it('Single Logout: a signed LogoutRequest ends the box session of that sign-in; a changed or unsigned one does not', async function () {
    const browser = await signedIn();
    const { assertion } = await checkedAssertion(
      await postSso(browser, { SAMLRequest: Buffer.from(authnRequest(SP, { id: '_slo1' })).toString('base64') }),
      '_slo1',
    );
    const nameId = textOf(assertion.getElementsByTagNameNS(SAML_NS.assertion, 'NameID')[0]!);
    const sessionIndex = assertion.getElementsByTagNameNS(SAML_NS.assertion, 'AuthnStatement')[0]!.getAttribute('SessionIndex')!;
    const query = signRedirectQuery(
      { SAMLRequest: encodeRedirectMessage(logoutRequest(SP, nameId, sessionIndex)), RelayState: 'bye' },
      spKey,
    );
    const tampered = await browser.get(`/auth/saml/slo?${query.replace('RelayState=bye', 'RelayState=b')}`);
    expect(tampered.status).to.equal(400);
    const unsigned = await browser.get(redirectPath('/auth/saml/slo', logoutRequest(SP, nameId, sessionIndex)));
    expect(unsigned.status).to.equal(400);
    const still = await postSso(browser, { SAMLRequest: Buffer.from(authnRequest(SP)).toString('base64') });
    expect(postedForm(still), 'still signed in after refused logouts').to.not.equal(undefined);

    const res = await browser.get(`/auth/saml/slo?${query}`);
    expect(res.status).to.equal(302);
    const back = new URL(res.headers.get('location')!);
    expect(`${back.origin}${back.pathname}`).to.equal(SLO);
    expect(back.searchParams.get('RelayState')).to.equal('bye');
    expect(back.searchParams.get('Signature')).to.be.a('string');
    const after = await postSso(browser, { SAMLRequest: Buffer.from(authnRequest(SP)).toString('base64') });
    expect(postedForm(after), 'signed out: the sign-in page, not an assertion').to.equal(undefined);
    expect(hiddenFields(after.text).return_to).to.match(/^\/auth\/saml\/sso\?resume=/);
  });

  it("refuses a Client whose SAML metadata is not an SP's (422)", async function () {
    const res = await box.json('PUT', '/Client/broken', { grant_types: [], saml: { metadata: { xml: '<nope/>' } } }, root);
    expect(res.status).to.equal(422);
    expect(res.body.errors).to.have.key('saml');
  });
});
