// SAML apps none of us wrote the SAML of: service providers made with pysaml2 (Python, pinned in
// test/py-client/requirements.txt; test/py-saml-sp/sp.py), each declared at the box as a Client with a
// saml section holding the SP's own metadata (its entity ID, ACS and certificate, as pysaml2 wrote
// them). The box runs on another site (localhost) than the apps (127.0.0.1), as in production. A
// person signs in in Chromium: the app's /login sends an AuthnRequest (signed over HTTP-Redirect;
// one app unsigned, one signed over HTTP-POST) to the box's {issuer}/auth/saml/sso, the box's sign-in
// page asks for her password, and the box's signed Response comes back to the app's ACS over
// HTTP-POST, where pysaml2 checks it with xmlsec1 against the box's IdP metadata
// ({issuer}/auth/saml/metadata) and shows what it read. What she sees there is what these tests assert:
// a persistent NameID that is the same at every sign-in, not her row id, and another at another
// app; the attributes the client's claims shape; an Assertion encrypted to the certificate of the
// app that asks for it (encryptAssertions), which pysaml2 decrypts; a sign-in the box starts
// (IdP-initiated) only for the app that allows it; and, as controls, an SP holding another key than
// the box's refuses its Responses, while one that reads the metadata after a key rotation accepts them.
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { Box } from '../support/box.js';
import { launchBrowser, screenshot } from '../support/browser.js';
import { startPySamlSp, type PySamlSp } from '../support/py-saml-sp.js';
import { declareSamlApp } from '../support/saml-apps.js';
import { startAll } from '../support/start-all.js';

const PERSISTENT = 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent';

/** What pysaml2's page shows after a Response it accepted. */
interface SignedIn {
  nameId: string;
  nameIdFormat: string;
  issuer: string;
  authnContext: string;
  /** yes or no: whether the Response carried the Assertion encrypted (pysaml2 decrypted it with the SP's key). */
  assertionEncrypted: string;
  attributes: Record<string, string>;
}

describe('SAML apps made with pysaml2 sign people in through the box', function () {
  this.timeout(180_000);
  let box: Box;
  let browser: Browser;
  let wiki: PySamlSp;
  let payroll: PySamlSp;
  let vault: PySamlSp;
  let portal: PySamlSp;
  /** An SP that trusts another key than the box's: its refusal shows the others check signatures. */
  let impostor: PySamlSp;
  let forgedMetadata: http.Server;
  /** Started after the box rotated its signing key (the last test). */
  let afterRotation: PySamlSp | undefined;
  let annId: number;
  const ann = { email: 'ann@example.com', password: 'ann-password-1' };

  /** Declares the SP as a SAML app of the box, from the metadata it serves, with an allow policy. */
  async function declare(id: string, sp: PySamlSp, saml: Record<string, unknown> = {}): Promise<void> {
    const metadata = await (await fetch(sp.metadataUrl)).text();
    await declareSamlApp(
      box,
      await box.rootToken(),
      id,
      { metadata: { xml: metadata }, ...saml },
      {
        claims: { mail: 'user.email', department: 'user.data.department' },
      },
    );
  }

  before(async function () {
    // The box on another site (localhost) than its apps (127.0.0.1), as in production: what crosses
    // between them is a cross-site navigation or POST, which SameSite cookies do not follow.
    [box, browser] = await startAll([Box.start({ hostname: 'localhost' }), launchBrowser()]);
    const issuerMetadata = `${box.url}/auth/saml/metadata`;
    [wiki, payroll, vault, portal] = await Promise.all([
      startPySamlSp(issuerMetadata, 'wiki'),
      // As many SPs do: its AuthnRequests unsigned (its metadata says AuthnRequestsSigned="false").
      startPySamlSp(issuerMetadata, 'payroll', { unsignedRequests: true }),
      // Its AuthnRequests signed over HTTP-POST, a cross-site POST to the box.
      startPySamlSp(issuerMetadata, 'vault', { postRequests: true }),
      startPySamlSp(issuerMetadata, 'portal', { allowUnsolicited: true }),
    ]);
    await declare('wiki', wiki);
    await declare('payroll', payroll);
    await declare('vault', vault, { encryptAssertions: true });
    await declare('portal', portal, { idpInitiated: true });
    // The box's IdP metadata with every certificate in it replaced by the wiki's own: what an SP
    // believes when someone else's key was pasted for the box's.
    const wikiCertificate = /<(?:\w+:)?X509Certificate>([^<]+)</.exec(await (await fetch(wiki.metadataUrl)).text())![1]!;
    const forged = (await (await fetch(issuerMetadata)).text()).replace(
      /(<(?:\w+:)?X509Certificate>)[^<]+/g,
      (_all, open: string) => open + wikiCertificate,
    );
    forgedMetadata = http.createServer((_req, res) => res.writeHead(200, { 'Content-Type': 'application/samlmetadata+xml' }).end(forged));
    await new Promise<void>((resolve) => forgedMetadata.listen(0, '127.0.0.1', resolve));
    impostor = await startPySamlSp(`http://127.0.0.1:${(forgedMetadata.address() as AddressInfo).port}/`, 'impostor');
    await declare('impostor', impostor);
    const user = await box.json('POST', '/users', { ...ann, data: JSON.stringify({ department: 'Finance' }) }, await box.rootToken());
    expect(user.status, user.text).to.equal(201);
    annId = user.body.id;
  });

  after(async function () {
    await browser?.close();
    await Promise.all([wiki?.stop(), payroll?.stop(), vault?.stop(), portal?.stop(), impostor?.stop(), afterRotation?.stop(), box?.stop()]);
    forgedMetadata?.close();
  });

  /** Reads the SP's page; a Response pysaml2 refused fails the test with pysaml2's own words. */
  async function shown(page: Page, sp: PySamlSp, app: string): Promise<SignedIn> {
    await page
      .getByRole('heading', { name: new RegExp(`^(Signed in to ${app}|The SAML response was refused)$`) })
      .waitFor()
      .catch(async (err: Error) => {
        // Stopped elsewhere (an error page of the box): what the person sees says why.
        throw new Error(`not back at ${app}: at ${page.url()}, which shows: ${(await page.locator('body').innerText()).slice(0, 1500)}`, {
          cause: err,
        });
      });
    if (await page.locator('#error').isVisible()) {
      expect.fail(`pysaml2 refused the box's Response: ${await page.locator('#error').textContent()}\n${sp.log().slice(-4000)}`);
    }
    const text = async (id: string): Promise<string> => ((await page.locator(`#${id}`).textContent()) ?? '').trim();
    const attributes: Record<string, string> = {};
    for (const row of await page.locator('#attributes tr').all()) {
      attributes[(await row.locator('th').textContent())!] = (await row.locator('td').textContent())!;
    }
    return {
      nameId: await text('name-id'),
      nameIdFormat: await text('name-id-format'),
      issuer: await text('issuer'),
      authnContext: await text('authn-context'),
      assertionEncrypted: await text('assertion-encrypted'),
      attributes,
    };
  }

  /**
   * In a browser of its own (no session at the box yet): `start` (the app's /login: SP-initiated), the
   * box's sign-in page, back at the app.
   */
  async function signIn(sp: PySamlSp, app: string, start = `${sp.url}/login`): Promise<SignedIn> {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      const started = Date.now();
      await page.goto(start);
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      expect(new URL(page.url()).origin).to.equal(box.url);
      await page.getByLabel('Email').fill(ann.email);
      await page.getByLabel('Password').fill(ann.password);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      const seen = await shown(page, sp, app);
      expect(page.url()).to.equal(sp.acsUrl);
      await screenshot(page, `saml-python-sp-${app}`);
      console.log(`      (${app}: ${new URL(start).pathname} to the app's page in ${Date.now() - started} ms)`);
      return seen;
    } finally {
      await context.close();
    }
  }

  it("pysaml2 accepts the box's signed Response: a persistent NameID, not Ann's row id, and the client's claims as attributes", async function () {
    const seen = await signIn(wiki, 'wiki');
    expect(seen.issuer).to.equal(`${box.url}/auth/saml/metadata`);
    expect(seen.nameIdFormat).to.equal(PERSISTENT);
    expect(seen.nameId).to.not.be.empty.and.not.equal(String(annId)).and.not.include(ann.email);
    expect(seen.attributes).to.include({ mail: ann.email, department: 'Finance' });
    // She signed in with a password: the AuthnStatement says so as SAML names it.
    expect(seen.authnContext).to.equal('urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport');
    expect(seen.assertionEncrypted).to.equal('no');
  });

  it('the NameID is the same at her next sign-in to the app', async function () {
    const first = await signIn(wiki, 'wiki');
    const second = await signIn(wiki, 'wiki');
    expect(second.nameId).to.equal(first.nameId);
  });

  it('another app sees another persistent NameID of her (pairwise)', async function () {
    const atWiki = await signIn(wiki, 'wiki');
    const atPayroll = await signIn(payroll, 'payroll');
    expect(atPayroll.nameIdFormat).to.equal(PERSISTENT);
    expect(atPayroll.nameId).to.not.be.empty.and.not.equal(atWiki.nameId).and.not.equal(String(annId));
    expect(atPayroll.attributes).to.include({ mail: ann.email });
  });

  it('an app that asks for encrypted assertions gets its Assertion encrypted to its certificate, and pysaml2 reads it', async function () {
    const seen = await signIn(vault, 'vault');
    expect(seen.assertionEncrypted).to.equal('yes');
    expect(seen.nameIdFormat).to.equal(PERSISTENT);
    expect(seen.attributes).to.include({ mail: ann.email, department: 'Finance' });
  });

  it('a sign-in the box starts (IdP-initiated) reaches the app that allows it, and pysaml2 takes the unsolicited Response', async function () {
    const seen = await signIn(portal, 'portal', `${box.url}/auth/saml/sso?sp=${encodeURIComponent(portal.entityId)}`);
    expect(seen.nameIdFormat).to.equal(PERSISTENT);
    expect(seen.attributes).to.include({ mail: ann.email });
  });

  it('the box starts no sign-in to an app that did not allow it: the person is stopped at the box, the app gets nothing', async function () {
    const posted = (): number => wiki.log().split('POST /acs').length;
    const before = posted();
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      const res = await page.goto(`${box.url}/auth/saml/sso?sp=${encodeURIComponent(wiki.entityId)}`);
      expect(res?.status()).to.equal(400);
      await page.getByRole('heading', { name: 'This sign-in cannot go on' }).waitFor();
      expect(await page.locator('body').innerText()).to.include('did not ask for');
      expect(new URL(page.url()).origin).to.equal(box.url);
    } finally {
      await context.close();
    }
    expect(posted()).to.equal(before);
  });

  it("an SP that holds another key for the box refuses the box's Response (pysaml2 checks what it is given)", async function () {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${impostor.url}/login`);
      await page.getByLabel('Email').fill(ann.email);
      await page.getByLabel('Password').fill(ann.password);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.getByRole('heading', { name: 'The SAML response was refused' }).waitFor();
      expect(await page.locator('#error').textContent()).to.match(/signature/i);
    } finally {
      await context.close();
    }
  });

  // Last: the box restarts on a new key.
  it('after the box rotates its signing key, its metadata lists the old and the new certificate, and an SP that reads it accepts the new signatures', async function () {
    // The signing certificates of its KeyDescriptors (the metadata's own Signature names one more).
    const certificates = async (): Promise<string[]> =>
      [
        ...(await (await fetch(`${box.url}/auth/saml/metadata`)).text()).matchAll(
          /<(?:\w+:)?KeyDescriptor use="signing">[\s\S]*?<(?:\w+:)?X509Certificate>([^<]+)</g,
        ),
      ].map((m) => m[1]!);
    const before = await certificates();
    expect(before).to.have.length(1);
    await box.rotateSigningKey('RS256');
    const after = await certificates();
    expect(after).to.have.length(2).and.include(before[0]!);
    afterRotation = await startPySamlSp(`${box.url}/auth/saml/metadata`, 'ledger');
    await declare('ledger', afterRotation);
    const seen = await signIn(afterRotation, 'ledger');
    expect(seen.nameIdFormat).to.equal(PERSISTENT);
  });
});
