// Keycloak 26.7.3 (test/support/keycloak.ts) as a SAML 2.0 identity provider upstream of the box
// (docs/guides/upstream-saml.md): a realm with Kim, a person in its group "eng"; at the box an
// IdentityProvider of type saml holding the realm's IdP metadata, and at Keycloak a SAML client
// made from the box's SP metadata for that provider (its entity ID, ACS and signing certificate:
// Keycloak checks the box's signed AuthnRequests), with mappers for the email and the groups.
// In Chromium, Kim opens an app of the box, presses "Sign in with Keycloak", signs in at Keycloak,
// and comes back through the box's ACS (Keycloak at 127.0.0.1, the box at localhost: two sites, so
// the browser's cross-site POST carries no cookie of the box, and the box's own page posts it on)
// to the app, which gets the email and the group Keycloak said.
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { Box } from '../support/box.js';
import { launchBrowser, screenshot } from '../support/browser.js';
import { codeClient, type CodeClient } from '../support/code-client.js';
import { startKeycloak, type Keycloak } from '../support/keycloak.js';
import { startAll } from '../support/start-all.js';

const REALM = 'corp';
const KIM = { username: 'kim', email: 'kim@corp.example', firstName: 'Kim', lastName: 'Example', password: 'kim-password-1' };

describe('Keycloak as a SAML identity provider signs people in to the box', function () {
  // Keycloak's first start (its schema in a new database) takes a minute or two on a busy machine.
  this.timeout(600_000);
  let box: Box;
  let keycloak: Keycloak;
  let browser: Browser;
  let page: Page;
  let appServer: http.Server;
  let appCallback: string;
  let app: CodeClient;
  let keycloakClientId: string;

  before(async function () {
    appServer = http.createServer((_req, res) => res.end('the app'));
    await new Promise<void>((resolve) => appServer.listen(0, '127.0.0.1', resolve));
    appCallback = `http://127.0.0.1:${(appServer.address() as AddressInfo).port}/callback`;
    [box, keycloak, browser] = await startAll([Box.start({ hostname: 'localhost' }), startKeycloak(), launchBrowser()]);
    await keycloak.createRealm(REALM);
    const kimId = await keycloak.createUser(REALM, KIM);
    const group = await keycloak.admin('POST', `/admin/realms/${REALM}/groups`, { name: 'eng' });
    const groupId = (group.headers.get('location') ?? '').split('/').pop()!;
    await keycloak.admin('PUT', `/admin/realms/${REALM}/users/${kimId}/groups/${groupId}`);

    // At the box, what the guide says: the IdP's metadata (here pasted: Keycloak answers on plain http at a loopback address,
    // which the box's address guard would not fetch), its entity ID, the group rule.
    const root = await box.rootToken();
    const idpMetadata = await (await fetch(keycloak.idpMetadataUrl(REALM))).text();
    const provider = await box.json(
      'PUT',
      '/IdentityProvider/keycloak',
      {
        type: 'saml',
        displayName: 'Keycloak',
        saml: { entityId: `${keycloak.baseUrl}/realms/${REALM}`, metadata: { xml: idpMetadata }, emailVerified: true },
        groups: [{ group: 'engineers', upstream: 'eng' }],
        // The realm's addresses are verified by it (its people are made by its admin): their email links, and is vouched for.
        linking: { trustEmail: true },
      },
      root,
    );
    expect(provider.status, provider.text).to.equal(201);
    const check = await box.json('POST', '/IdentityProvider/keycloak/$check', undefined, root);
    expect(check.body.ok, JSON.stringify(check.body)).to.equal(true);

    // At Keycloak, what its admin does with the box's SP metadata: Clients > Import client.
    const spMetadata = await box.request('GET', '/auth/upstream/keycloak/saml/metadata');
    expect(spMetadata.status).to.equal(200);
    const clientId = (keycloakClientId = await keycloak.addSamlClient(REALM, spMetadata.text, {
      attributes: { 'saml.encrypt': 'false', 'saml.client.signature': 'true' },
      mappers: { email: 'email' },
    }));
    await keycloak.admin('POST', `/admin/realms/${REALM}/clients/${clientId}/protocol-mappers/models`, {
      name: 'groups',
      protocol: 'saml',
      protocolMapper: 'saml-group-membership-mapper',
      config: { 'attribute.name': 'groups', 'full.path': 'false', single: 'false', 'attribute.nameformat': 'Basic' },
    });

    app = await codeClient(box, root, appCallback, 'app', 'openid email groups');
    page = await (await browser.newContext()).newPage();
  });

  afterEach(function () {
    // What the box said of a sign-in that went wrong, where the failure is read.
    if (this.currentTest?.state === 'failed')
      console.log(
        box.logs
          .filter((l) => l.includes('upstream'))
          .slice(-5)
          .join('\n'),
      );
  });

  after(async function () {
    await browser?.close();
    await Promise.all([box?.stop(), keycloak?.stop()]);
    appServer?.close();
  });

  it('Kim signs in at Keycloak and the app gets her email and group from its Assertion', async function () {
    await page.goto(`${box.url}${app.authorizePath()}`);
    await page.getByRole('button', { name: 'Sign in with Keycloak' }).click();
    await page.waitForURL((url) => url.origin === keycloak.baseUrl);
    await page.locator('#username').fill(KIM.username);
    await page.locator('#password').fill(KIM.password);
    await screenshot(page, 'saml-keycloak-idp-sign-in');
    await page.locator('#kc-login').click();
    await page.waitForURL((url) => url.href.startsWith(appCallback), { timeout: 30_000 });
    const claims = await app.claimsOf(new URL(page.url()).searchParams.get('code')!);
    expect(claims.email).to.equal(KIM.email);
    expect(claims.email_verified).to.equal(true);
    expect(claims.groups).to.deep.equal(['engineers']);
    // Keycloak's POST came from another site without the box's cookie; the box's own page posted it on, with it.
    const acs = box.logs.filter((l) => l.includes('"url":"/auth/upstream/keycloak/saml/acs"')).map((l) => JSON.parse(l).status as number);
    expect(acs).to.deep.equal([200, 303]);

    // The box shows her signed in, as Keycloak said.
    await page.goto(`${box.url}/auth/account`);
    await page.getByRole('heading', { name: 'Your account' }).waitFor();
    expect(await page.locator('main').textContent()).to.include(KIM.email);
    expect(await page.locator('#linked-providers li').textContent()).to.include('Keycloak: linked');
    await screenshot(page, 'saml-keycloak-idp-account');
  });

  it("Keycloak encrypting its Assertions to the box's certificate: Kim signs in the same", async function () {
    const path = `/admin/realms/${REALM}/clients/${keycloakClientId}`;
    const client = (await (await keycloak.admin('GET', path)).json()) as { attributes: Record<string, string> };
    const spMetadata = (await box.request('GET', '/auth/upstream/keycloak/saml/metadata')).text;
    const certificate = /<md:KeyDescriptor use="encryption">.*?<ds:X509Certificate>([^<]+)</.exec(spMetadata)![1]!;
    await keycloak.admin('PUT', path, {
      ...client,
      attributes: {
        ...client.attributes,
        'saml.encrypt': 'true',
        'saml.encryption.certificate': certificate,
        // Keycloak's encryption defaults left as they are (XML Encryption 1.1's rsa-oaep with SHA-256
        // and MGF1-SHA-256, AES-256-GCM), as the guide says.
      },
    });
    const fresh = await (await browser.newContext()).newPage();
    const posted: string[] = [];
    fresh.on('request', (request) => {
      if (request.method() === 'POST' && request.url().endsWith('/saml/acs')) posted.push(request.postData() ?? '');
    });
    await fresh.goto(`${box.url}${app.authorizePath()}`);
    await fresh.getByRole('button', { name: 'Sign in with Keycloak' }).click();
    await fresh.waitForURL((url) => url.origin === keycloak.baseUrl);
    await fresh.locator('#username').fill(KIM.username);
    await fresh.locator('#password').fill(KIM.password);
    await fresh.locator('#kc-login').click();
    await fresh.waitForURL((url) => url.href.startsWith(appCallback), { timeout: 30_000 });
    const claims = await app.claimsOf(new URL(fresh.url()).searchParams.get('code')!);
    expect(claims.email).to.equal(KIM.email);
    expect(claims.groups).to.deep.equal(['engineers']);
    const response = Buffer.from(new URLSearchParams(posted[0]).get('SAMLResponse')!, 'base64').toString();
    expect(response).to.include('EncryptedAssertion').and.not.include(KIM.email);
    expect(response)
      .to.include('Algorithm="http://www.w3.org/2009/xmlenc11#rsa-oaep"')
      .and.include('Algorithm="http://www.w3.org/2009/xmlenc11#mgf1sha256"');
  });
});
