// Keycloak 26.7.3 (test/support/keycloak.ts: the distribution make bench-peers builds) as a SAML
// service provider of the box: a realm whose identity provider "boxauth" is the box, imported from
// the box's IdP metadata URL as an admin of Keycloak does it (identity brokering), with attribute
// mappers for the email and the name; at the box, a Client with a saml section holding Keycloak's SP
// metadata for that provider (its entity ID, ACS and signing certificate). A person opens the
// realm's account console, picks "boxauth" on Keycloak's sign-in page, signs in at the box, and
// Keycloak (which checks the box's signed Response itself) shows her account: the email and name
// from the box's assertion, her federated identity named by the NameID. Keycloak sends its
// AuthnRequest signed over HTTP-POST (what it picks from the box's metadata), where pysaml2
// (saml-python-sp.test.ts) uses HTTP-Redirect: the two bindings of SP-initiated SSO.
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { Box } from '../support/box.js';
import { launchBrowser, screenshot } from '../support/browser.js';
import { startKeycloak, type Keycloak } from '../support/keycloak.js';
import { logTail } from '../bench/peers/process.js';
import { startAll } from '../support/start-all.js';

const REALM = 'staff';
/** A realm whose identity provider asks the box for encrypted assertions. */
const SEALED_REALM = 'vault';
const ALIAS = 'boxauth';
const PERSISTENT = 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent';

describe('Keycloak as a SAML service provider signs people in through the box', function () {
  // Keycloak's first start (its schema in a new database) takes a minute or two on a busy machine.
  this.timeout(600_000);
  let box: Box;
  let keycloak: Keycloak;
  let browser: Browser;
  let annId: number;
  const ann = { email: 'ann@example.com', password: 'ann-password-1', given: 'Ann', family: 'Example' };

  /**
   * What an admin of Keycloak does (Identity providers > SAML v2.0 > the box's metadata URL, then
   * mappers), and what the box's admin does with Keycloak's SP metadata for it: a Client `id` with
   * a saml section and an allow policy. `sealed`: Keycloak asks for encrypted assertions (its
   * metadata then carries its realm's encryption key) and the Client encrypts them.
   */
  async function brokerToBox(realm: string, id: string, sealed: boolean): Promise<void> {
    await keycloak.createRealm(realm);
    await keycloak.addSamlIdentityProvider(realm, {
      alias: ALIAS,
      displayName: 'boxauth',
      metadataUrl: `${box.url}/auth/saml/metadata`,
      config: {
        nameIDPolicyFormat: PERSISTENT,
        principalType: 'SUBJECT',
        validateSignature: 'true',
        wantAssertionsSigned: 'true',
        wantAuthnRequestsSigned: 'true',
        wantAssertionsEncrypted: String(sealed),
        signatureAlgorithm: 'RSA_SHA256',
        syncMode: 'FORCE',
      },
      mappers: { mail: 'email', givenName: 'firstName', sn: 'lastName' },
    });
    const root = await box.rootToken();
    const metadata = await (await fetch(keycloak.brokerMetadataUrl(realm, ALIAS))).text();
    const client = await box.json(
      'PUT',
      `/Client/${id}`,
      {
        grant_types: [],
        first_party: true,
        saml: { metadata: { xml: metadata }, ...(sealed ? { encryptAssertions: true } : {}) },
        claims: { mail: 'user.email', givenName: 'user.data.given_name', sn: 'user.data.family_name' },
      },
      root,
    );
    expect(client.status, client.text).to.be.below(300);
    const policy = await box.json('PUT', `/AccessPolicy/${id}-allow`, { engine: 'allow', link: [{ id, resourceType: 'Client' }] }, root);
    expect(policy.status, policy.text).to.be.below(300);
  }

  before(async function () {
    // The box on another site (localhost) than Keycloak (127.0.0.1), as in production: Keycloak's
    // AuthnRequest is a cross-site POST to the box, the box's Response one to Keycloak.
    [box, keycloak, browser] = await startAll([Box.start({ hostname: 'localhost' }), startKeycloak(), launchBrowser()]);
    await brokerToBox(REALM, 'keycloak', false);
    await brokerToBox(SEALED_REALM, 'keycloak-sealed', true);
    const user = await box.json(
      'POST',
      '/users',
      { email: ann.email, password: ann.password, data: JSON.stringify({ given_name: ann.given, family_name: ann.family }) },
      await box.rootToken(),
    );
    expect(user.status, user.text).to.equal(201);
    annId = user.body.id;
  });

  after(async function () {
    await browser?.close();
    await Promise.all([keycloak?.stop(), box?.stop()]);
  });

  /**
   * Waits for her account in the console; Keycloak's page when it refused what the box sent (or
   * stopped her anywhere else) fails the test with what it shows and the end of its log.
   */
  async function accountShown(page: Page): Promise<void> {
    const refused = page.locator('#kc-error-message, .kc-feedback-text, .alert-error');
    const account = page.getByRole('heading', { name: 'Personal info' });
    const stopped = async (why: string): Promise<never> =>
      expect.fail(`${why} at ${page.url()}: ${(await page.locator('body').innerText()).slice(0, 1500)}\n${logTail(keycloak.logFile, 40)}`);
    await account
      .or(refused)
      .first()
      .waitFor({ timeout: 60_000 })
      .catch(() => stopped('no account console'));
    if (await refused.first().isVisible()) await stopped("Keycloak refused the box's Response");
  }

  /**
   * In a browser of its own: the realm's account console, "boxauth" on Keycloak's sign-in page,
   * the box's sign-in page, back at her account there. Returns the NameID Keycloak linked her by,
   * and the Response the browser carried from the box to Keycloak's consumer service.
   */
  async function signInToAccountConsole(realm: string): Promise<{ nameId: string; response: string }> {
    const context = await browser.newContext();
    let response = '';
    try {
      const page = await context.newPage();
      page.on('request', (request) => {
        if (request.method() === 'POST' && request.url().startsWith(keycloak.brokerEndpoint(realm, ALIAS))) {
          const posted = new URLSearchParams(request.postData() ?? '').get('SAMLResponse');
          if (posted) response = Buffer.from(posted, 'base64').toString('utf8');
        }
      });
      const started = Date.now();
      await page.goto(`${keycloak.baseUrl}/realms/${realm}/account`);
      await page.getByRole('link', { name: 'boxauth' }).click();
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      expect(new URL(page.url()).origin).to.equal(box.url);
      await page.getByLabel('Email').fill(ann.email);
      await page.getByLabel('Password').fill(ann.password);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await accountShown(page);
      await screenshot(page, `saml-keycloak-sp-${realm}-account`);
      console.log(`      (${realm}: account console to her signed-in account in ${Date.now() - started} ms)`);
      expect(await page.getByLabel('Email').inputValue()).to.equal(ann.email);
      expect(await page.getByLabel('First name').inputValue()).to.equal(ann.given);
      expect(await page.getByLabel('Last name').inputValue()).to.equal(ann.family);
    } finally {
      await context.close();
    }
    // Keycloak linked the account it made for her to the box by the assertion's NameID.
    const [user] = (await (
      await keycloak.admin('GET', `/admin/realms/${realm}/users?email=${encodeURIComponent(ann.email)}&exact=true`)
    ).json()) as { id: string }[];
    expect(user, 'a user in the realm with her email').to.not.equal(undefined);
    const links = (await (await keycloak.admin('GET', `/admin/realms/${realm}/users/${user!.id}/federated-identity`)).json()) as {
      identityProvider: string;
      userId: string;
    }[];
    expect(links).to.have.length(1);
    expect(links[0]!.identityProvider).to.equal(ALIAS);
    return { nameId: links[0]!.userId, response };
  }

  it("she signs in to Keycloak's account console through the box; Keycloak shows her email and name from the assertion", async function () {
    const { nameId, response } = await signInToAccountConsole(REALM);
    expect(nameId).to.not.be.empty.and.not.equal(String(annId)).and.not.include(ann.email);
    expect(response).to.match(/<(\w+:)?Assertion /);
  });

  it('a realm that asks for encrypted assertions gets them, and Keycloak decrypts them; its NameID of her is its own', async function () {
    const plain = await signInToAccountConsole(REALM);
    const sealed = await signInToAccountConsole(SEALED_REALM);
    expect(sealed.nameId).to.not.be.empty.and.not.equal(plain.nameId);
    // What the box sent Keycloak's consumer service: an EncryptedAssertion, no Assertion in the clear.
    expect(sealed.response).to.match(/<(\w+:)?EncryptedAssertion[ >]/);
    expect(sealed.response)
      .to.not.match(/<(\w+:)?Assertion[ >]/)
      .and.not.include(ann.email);
  });
});
