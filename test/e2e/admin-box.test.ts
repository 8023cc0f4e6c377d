// The admin console's tabs of the box's records in Chromium (docs/guides/admin-console.md):
// a client created and its secret rotated in the console, then used for a token; a policy
// written and dry-run; an App's refusal explained; a Kubernetes-owned client read-only; a
// delegated admin of one App; and the attacks (CSRF, markup and terminal escapes, the secret
// shown once). Each change is checked through the REST API.
import { expect } from 'chai';
import pg from 'pg';
import type { Browser, Page } from 'playwright-core';
import { Box, basic, eventually } from '../support/box.js';
import { launchBrowser, screenshot } from '../support/browser.js';

const WIKI_AUDIENCE = 'https://wiki.example';

describe('admin console: Clients, Access policies, Apps (Chromium)', function () {
  this.timeout(120_000);
  let box: Box;
  let browser: Browser;
  let page: Page;
  let root: string;
  const api = async (path: string): Promise<any> => (await box.json('GET', path, undefined, root)).body;
  const tokenOf = (id: string, secret: string) =>
    box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic(id, secret) });

  async function sql(text: string, params: unknown[] = []): Promise<void> {
    const db = new pg.Client({ connectionString: box.databaseUrl });
    await db.connect();
    try {
      await db.query(text, params);
    } finally {
      await db.end();
    }
  }

  async function signIn(on: Page, email: string, password: string): Promise<void> {
    await on.goto(`${box.url}/admin`);
    await on.getByLabel('Email').fill(email);
    await on.getByLabel('Password').fill(password);
    await on.getByRole('button', { name: 'Sign in', exact: true }).click();
    await on.getByRole('tab', { name: 'Users' }).waitFor();
  }

  /** The tab opened afresh (the page reloaded: what it shows is what the API answers now). */
  async function openTab(name: string, on: Page = page): Promise<void> {
    await on.reload();
    await on.getByRole('tab', { name: 'Users' }).waitFor();
    await on.getByRole('tab', { name, exact: true }).click();
  }

  before(async function () {
    [box, browser] = await Promise.all([
      Box.start({ env: { BOXAUTH_ADMIN_EMAIL: 'admin@example.com', BOXAUTH_ADMIN_PASSWORD: 'admin-password' } }),
      launchBrowser(),
    ]);
    root = await box.rootToken();
    page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    const wiki = await box.json('PUT', '/App/wiki', { urls: [WIKI_AUDIENCE], description: 'The team wiki' }, root);
    expect(wiki.status, wiki.text).to.equal(201);
    const payroll = await box.json('PUT', '/App/payroll', { urls: ['https://payroll.example'] }, root);
    expect(payroll.status, payroll.text).to.equal(201);
    await box.addClient('reader', { audience: [WIKI_AUDIENCE] }, { secret: 'reader-secret', policy: false });
    await signIn(page, 'admin@example.com', 'admin-password');
  });
  after(async function () {
    await browser?.close();
    await box?.stop();
  });

  describe('Clients', function () {
    let shown = '';

    it('creates a client, shows its secret once, and the secret gets a token (client_credentials)', async function () {
      await page.getByRole('tab', { name: 'Clients' }).click();
      await page.getByRole('list', { name: 'Clients' }).getByRole('button', { name: 'root' }).waitFor();
      await page.getByRole('button', { name: 'New client' }).click();
      const panel = page.locator('#panel-clients');
      await panel.getByLabel('Name').fill('orders');
      await panel.getByLabel('Description').fill('The orders service');
      expect(await panel.getByRole('checkbox', { name: 'Client credentials' }).isChecked()).to.equal(true);
      await panel.getByRole('button', { name: 'Save' }).click();
      await page.getByText('Saved orders.').waitFor();
      await panel.getByText('it will not be shown again').waitFor();
      shown = (await page.locator('#client-secret-value').textContent())!;
      expect(shown).to.match(/^[A-Za-z0-9_-]{43}$/); // 32 random bytes, base64url
      expect(await api('/Client/orders')).to.include({ description: 'The orders service' });
      const token = await tokenOf('orders', shown);
      expect(token.status, token.text).to.equal(200);
    });

    it('rotates the secret: a new one shown once, the old one refused, the new one gets a token', async function () {
      const panel = page.locator('#panel-clients');
      await panel.getByRole('button', { name: 'Rotate secret' }).click();
      await page.getByText('Rotated the secret of orders: the old one no longer works.').waitFor();
      const rotated = (await page.locator('#client-secret-value').textContent())!;
      expect(rotated)
        .to.match(/^[A-Za-z0-9_-]{43}$/)
        .and.not.equal(shown);
      await screenshot(page, 'admin-clients');
      expect((await tokenOf('orders', shown)).status).to.equal(401);
      expect((await tokenOf('orders', rotated)).status).to.equal(200);
      expect(await api('/Client/orders')).to.include({ description: 'The orders service' }); // the record kept as it was
      shown = rotated;
    });

    it('the secret shown once is in no later GET, not in the page after a reload, and not in the log', async function () {
      for (const path of ['/Client/orders', '/Client?_count=1000', '/Client?id=orders'])
        expect((await box.json('GET', path, undefined, root)).text, path).to.not.include(shown);
      const yaml = await box.request('GET', '/Client/orders', { headers: { Authorization: `Bearer ${root}`, Accept: 'application/yaml' } });
      expect(yaml.text).to.not.include(shown);
      await openTab('Clients');
      await page.getByRole('list', { name: 'Clients' }).getByRole('button', { name: 'orders' }).click();
      await page.getByRole('heading', { name: 'Edit orders' }).waitFor();
      expect(await page.locator('#client-secret').isHidden()).to.equal(true);
      expect(await page.content()).to.not.include(shown);
      expect(await page.evaluate(() => JSON.stringify({ ...sessionStorage }) + JSON.stringify({ ...localStorage }))).to.not.include(shown);
      expect(box.logs.filter((l) => l.includes(shown))).to.deep.equal([]);
    });

    it('the filter narrows as each character is typed; Save changes a client; Delete removes one without confirmation', async function () {
      await box.addClient('orders-batch', {}, { policy: false });
      await openTab('Clients');
      const list = page.getByRole('list', { name: 'Clients' });
      await list.getByRole('button', { name: 'orders-batch' }).waitFor();
      const filter = page.locator('#panel-clients').getByRole('searchbox', { name: 'Filter' });
      const counts: number[] = [];
      for (const ch of 'ord') {
        await filter.press(ch);
        counts.push(await list.getByRole('button').count());
      }
      expect(counts.at(-1)).to.equal(2);
      await filter.fill('orders-');
      expect(await list.getByRole('button').allTextContents()).to.deep.equal(['orders-batch']);

      await list.getByRole('button', { name: 'orders-batch' }).click();
      const panel = page.locator('#panel-clients');
      await panel.getByLabel('Description').fill('Nightly batch');
      await panel.getByRole('button', { name: 'Save' }).click();
      await page.getByText('Saved orders-batch.').waitFor();
      expect(await api('/Client/orders-batch')).to.include({ description: 'Nightly batch' });
      expect(await page.locator('#client-secret').isHidden()).to.equal(true); // a Save sets no secret

      await panel.getByRole('button', { name: 'Delete' }).click();
      await page.getByText('Deleted orders-batch.').waitFor();
      expect((await box.json('GET', '/Client/orders-batch', undefined, root)).status).to.equal(404);
    });

    it("the box's own clients cannot be deleted: the box's 409 is shown", async function () {
      await openTab('Clients');
      await page.getByRole('list', { name: 'Clients' }).getByRole('button', { name: 'root', exact: true }).click();
      await page.locator('#panel-clients').getByRole('button', { name: 'Delete' }).click();
      await page
        .locator('#client-form-error')
        .getByText(/^Client .root. is one of the box's own records \(created at start-up\): it cannot be deleted$/)
        .waitFor();
      expect((await box.json('GET', '/Client/root', undefined, root)).status).to.equal(200);
    });

    it('a client a Kubernetes resource owns is read-only and names its owner', async function () {
      await box.addClient('k8s-orders', { description: 'From the cluster' }, { policy: false });
      await sql("UPDATE clients SET managed_by = 'Client team-a/orders' WHERE id = 'k8s-orders'");
      await openTab('Clients');
      const list = page.getByRole('list', { name: 'Clients' });
      expect(await list.getByRole('button', { name: /^k8s-orders/ }).textContent()).to.equal('k8s-orders Kubernetes');
      await list.getByRole('button', { name: /^k8s-orders/ }).click();
      const panel = page.locator('#panel-clients');
      await panel.getByText('Managed by the Kubernetes resource Client team-a/orders: read-only here.').waitFor();
      for (const name of ['Save', 'Rotate secret', 'Delete'])
        expect(await panel.getByRole('button', { name }).isDisabled(), name).to.equal(true);
      expect(await panel.getByLabel('Description').isDisabled()).to.equal(true);
      expect(await api('/Client/k8s-orders')).to.include({ description: 'From the cluster' });
    });

    it("shows a SAML app: what its metadata says, its settings, its metadata URL's status, and what to give the app", async function () {
      const metadata =
        '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://wiki.example/saml">' +
        '<md:SPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">' +
        '<md:SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://wiki.example/saml/slo"/>' +
        '<md:AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="https://wiki.example/saml/acs" index="0" isDefault="true"/>' +
        '</md:SPSSODescriptor></md:EntityDescriptor>';
      const saml = { metadata: { xml: metadata }, nameIdFormat: 'emailAddress', idpInitiated: true };
      expect((await box.json('PUT', '/Client/wiki-saml', { grant_types: [], saml }, root)).status).to.equal(201);
      // A URL the box's guard refuses (loopback, in a box as in production): the box records the refusal without any sign-in.
      const url = 'https://127.0.0.1:9/saml/metadata';
      expect((await box.json('PUT', '/Client/crm-saml', { grant_types: [], saml: { metadata: { url } } }, root)).status).to.equal(201);
      await eventually('the refusal recorded', async () => (await api('/Client/crm-saml/$saml')).metadata.status, 20_000);

      await openTab('Clients');
      const list = page.getByRole('list', { name: 'Clients' });
      await list.getByRole('button', { name: 'wiki-saml' }).click();
      const section = page.getByRole('region', { name: 'SAML app' });
      await section.getByText('Its metadata is written into the client.').waitFor();
      const facts = section.locator('#client-saml-list');
      await facts.getByText('https://wiki.example/saml/acs (HTTP-POST, index 0, default)').waitFor();
      const text = await facts.innerText();
      for (const said of [
        'https://wiki.example/saml',
        'https://wiki.example/saml/slo (HTTP-Redirect)',
        'emailAddress',
        'allowed (idpInitiated)',
      ])
        expect(text).to.include(said);
      // Names the app's owner chose are isolated (<bdi>): their direction changes nothing around them.
      expect(await facts.locator('bdi', { hasText: 'https://wiki.example/saml/acs' }).count()).to.equal(1);
      const idp = await section.locator('#client-saml-idp').innerText();
      for (const said of [`${box.url}/auth/saml/metadata`, `${box.url}/auth/saml/sso`, `${box.url}/auth/saml/slo`])
        expect(idp).to.include(said);
      await screenshot(page, 'admin-client-saml-app');

      await list.getByRole('button', { name: 'crm-saml' }).click();
      await section.getByText(/could not use its metadata .*SamlMetadataUnreachable.*does not fetch from the address/).waitFor();
      expect(await section.locator('#client-saml-status bdi').first().textContent()).to.equal(url);
      await screenshot(page, 'admin-client-saml-refused');

      // A client that is no SAML app has no such section.
      await list.getByRole('button', { name: 'reader' }).click();
      await eventually('the section hidden', async () => !(await section.isVisible()), 5000);
    });
  });

  describe('Access policies', function () {
    it('writes a policy of the App wiki, shows what it links, and dry-runs it: allowed, then denied with each policy’s reason', async function () {
      await page.getByRole('tab', { name: 'Access policies' }).click();
      await page
        .getByRole('list', { name: 'Access policies' })
        .getByRole('button', { name: /^root-allow/ })
        .waitFor();
      await page.getByRole('button', { name: 'New policy' }).click();
      const form = page.locator('#policy-form');
      await form.getByLabel('Name').fill('wiki-readers');
      await form.getByLabel('Description').fill('Readers of the wiki');
      await form.getByLabel('App').fill('wiki');
      await form.getByLabel('Engine').selectOption('matcho');
      await form.getByLabel('Links').fill('Client reader\nGroup editors');
      await form.getByLabel('Rule').fill('{"request-method": "get"}');
      await form.getByRole('button', { name: 'Save' }).click();
      await page.getByText('Saved wiki-readers.').waitFor();
      await form.getByText('Applies to client reader, group editors; guards App wiki.').waitFor();
      const stored = await api('/AccessPolicy/wiki-readers');
      expect(stored).to.deep.include({
        app: 'wiki',
        engine: 'matcho',
        link: [
          { resourceType: 'Client', id: 'reader' },
          { resourceType: 'Group', id: 'editors' },
        ],
        matcho: { 'request-method': 'get' },
      });

      const dry = page.locator('#dry-run-form');
      await dry.getByLabel('App').fill('wiki');
      await dry.getByLabel('Path').fill('/docs/a');
      await dry.getByLabel('As').selectOption('client');
      await dry.getByLabel('Who').fill('reader');
      await dry.getByRole('button', { name: 'Try' }).click();
      const verdict = page.locator('#dry-run-verdict');
      await verdict.getByText(/^Allowed \(200\): GET \/docs\/a by client reader/).waitFor();
      const rows = async (): Promise<string[][]> =>
        (await page.locator('#dry-run-rows tr').allInnerTexts()).map((r) => r.split('\t').map((c) => c.trim()));
      expect(await rows()).to.deep.equal([['wiki-readers', 'allows', '']]);

      await dry.getByLabel('Method').selectOption('DELETE');
      await dry.getByRole('button', { name: 'Try' }).click();
      await verdict.getByText(/^Denied \(403\): DELETE \/docs\/a by client reader/).waitFor();
      const [denied] = await rows();
      expect(denied!.slice(0, 2)).to.deep.equal(['wiki-readers', 'does not allow']);
      expect(denied![2]).to.include('request-method');
      await screenshot(page, 'admin-policies');

      // A request pasted as JSON is sent as it is.
      await dry.getByLabel('Or a request (JSON)').fill('{"app": "wiki", "method": "GET", "path": "/x", "client": "reader"}');
      await dry.getByRole('button', { name: 'Try' }).click();
      await verdict.getByText(/^Allowed \(200\): GET \/x by client reader/).waitFor();

      // A person, named by email: no policy of the wiki links them.
      await dry.getByLabel('Or a request (JSON)').fill('');
      await dry.getByLabel('As').selectOption('user');
      await dry.getByLabel('Who').fill('admin@example.com');
      await dry.getByRole('button', { name: 'Try' }).click();
      await verdict.getByText(/^Denied \(403\): DELETE \/docs\/a by user admin@example.com/).waitFor();
    });

    it('writes a cel policy as an expression, and shows the problems of one the box refuses under Rule', async function () {
      await page.getByRole('tab', { name: 'Access policies' }).click();
      await page.getByRole('button', { name: 'New policy' }).click();
      const form = page.locator('#policy-form');
      await form.getByLabel('Name').fill('wiki-owners');
      await form.getByLabel('App').fill('wiki');
      await form.getByLabel('Engine').selectOption('cel');
      await form.getByLabel('Rule').fill('request.user.emial == request.resource.properties.owner');
      await form.getByRole('button', { name: 'Save' }).click();
      await page
        .locator('#policy-rule-error')
        .getByText(/request\.user\.emial: no such field/)
        .waitFor();
      await form.getByLabel('Rule').fill('request.user.email == request.resource.properties.owner');
      await form.getByRole('button', { name: 'Save' }).click();
      await page.getByText('Saved wiki-owners.').waitFor();
      expect(await api('/AccessPolicy/wiki-owners')).to.deep.include({
        app: 'wiki',
        engine: 'cel',
        cel: 'request.user.email == request.resource.properties.owner',
      });
      expect(await form.getByLabel('Rule').inputValue()).to.equal('request.user.email == request.resource.properties.owner');
      await box.json('DELETE', '/AccessPolicy/wiki-owners', undefined, root);
    });

    it('edits and deletes a policy; a reserved one answers its 409', async function () {
      await openTab('Access policies');
      const list = page.getByRole('list', { name: 'Access policies' });
      await list.getByRole('button', { name: /^wiki-readers/ }).click();
      const form = page.locator('#policy-form');
      await form.getByLabel('Links').fill('Client reader');
      await form.getByRole('button', { name: 'Save' }).click();
      await page.getByText('Saved wiki-readers.').waitFor();
      expect((await api('/AccessPolicy/wiki-readers')).link).to.deep.equal([{ resourceType: 'Client', id: 'reader' }]);
      await form.getByLabel('Rule').fill('{not json');
      await form.getByRole('button', { name: 'Save' }).click();
      expect(await page.locator('#policy-rule-error').textContent()).to.equal('Rule must be valid JSON.');

      await list.getByRole('button', { name: /^root-allow/ }).click();
      await form.getByRole('button', { name: 'Delete' }).click();
      await page
        .locator('#policy-form-error')
        .getByText(/one of the box's own records/)
        .waitFor();

      await box.json('PUT', '/AccessPolicy/wiki-old', { engine: 'allow', app: 'wiki' }, root);
      await openTab('Access policies');
      await list.getByRole('button', { name: /^wiki-old/ }).click();
      await form.getByRole('button', { name: 'Delete' }).click();
      await page.getByText('Deleted wiki-old.').waitFor();
      expect((await box.json('GET', '/AccessPolicy/wiki-old', undefined, root)).status).to.equal(404);
    });
  });

  describe('Apps', function () {
    it("shows each App's hosts and policies, and its refusal with its explanation", async function () {
      const token = (
        await box.form(
          '/auth/token',
          { grant_type: 'client_credentials', audience: WIKI_AUDIENCE },
          { Authorization: basic('reader', 'reader-secret') },
        )
      ).body.access_token as string;
      const refused = await box.request('GET', '/authz/forward-auth/wiki', {
        headers: {
          'X-Forwarded-Method': 'POST',
          'X-Forwarded-Host': 'wiki.example',
          'X-Forwarded-Uri': '/docs/new',
          Authorization: `Bearer ${token}`,
        },
      });
      expect(refused.status, refused.text).to.equal(403);
      const decision = refused.headers.get('x-boxauth-decision')!;
      await eventually(
        'the refusal kept',
        async () => (await box.json('GET', `/authz/decisions/${decision}`, undefined, root)).status === 200,
      );

      await openTab('Apps');
      const list = page.getByRole('list', { name: 'Apps' });
      expect(await page.locator('#apps-open').isHidden(), 'an admin who may list the Apps is not asked for an id').to.equal(true);
      await list.getByRole('button', { name: 'wiki · wiki.example' }).click();
      await page.getByRole('heading', { name: 'wiki', exact: true }).waitFor();
      await page.getByRole('list', { name: 'Hosts' }).getByText('https://wiki.example').waitFor();
      await page.getByRole('list', { name: 'Policies' }).getByText('wiki-readers: applies to client reader').waitFor();
      const refusals = page.locator('#app-refusals-rows');
      await refusals.getByRole('cell', { name: '403', exact: true }).waitFor();
      await refusals
        .getByRole('button', { name: /^Explain the refusal of / })
        .first()
        .click();
      await page
        .locator('#app-explain-verdict')
        .getByText(/^Denied \(403\): POST \/docs\/new by client reader/)
        .waitFor();
      const [row] = (await page.locator('#app-explain-rows tr').allInnerTexts()).map((r) => r.split('\t').map((c) => c.trim()));
      expect(row!.slice(0, 2)).to.deep.equal(['wiki-readers', 'does not allow']);
      await screenshot(page, 'admin-apps');

      await list.getByRole('button', { name: /^payroll/ }).click();
      await page.getByRole('list', { name: 'Policies' }).getByText('None: every request is refused').waitFor();
      await refusals.getByText('None kept.').waitFor();
    });
  });

  describe('attacks', function () {
    it("CSRF: a cross-site form POST to the API with the admin's cookies changes nothing", async function () {
      const cookies = await page.context().cookies(); // the sign-in's, on /auth
      expect(cookies.length, 'the admin is signed in with cookies').to.be.above(0);
      // A page of another site that posts to the box as soon as it loads: a JSON-looking text/plain body, and a form.
      const attack = `<!doctype html><body>
        <form id="f" method="post" action="${box.url}/Client" enctype="text/plain">
          <input name='{"id": "evil", "grant_types": ["client_credentials"], "secret": "evil-secret-123", "x": "' value='"}'>
        </form>
        <script>document.getElementById('f').submit()</script></body>`;
      await page.route('https://attacker.example/**', (route) => route.fulfill({ contentType: 'text/html', body: attack }));
      // In the admin's own tab: its browser holds the sign-in's cookies and the console's token.
      const posted = page.waitForResponse((r) => r.url() === `${box.url}/Client` && r.request().method() === 'POST');
      await page.goto('https://attacker.example/');
      expect((await posted).status()).to.equal(401);
      await page.goto(`${box.url}/admin`);
      await page.getByRole('tab', { name: 'Users' }).waitFor();
      // Even sent with every cookie of the admin's browser, a write without the bearer token is refused.
      const cookieHeader = cookies.map((c) => `${c.name}=${c.value}`).join('; ');
      const forged = await box.request('POST', '/AccessPolicy', {
        headers: { Cookie: cookieHeader, 'Content-Type': 'application/json', Origin: 'https://attacker.example' },
        body: JSON.stringify({ id: 'evil-allow', engine: 'allow' }),
      });
      expect(forged.status).to.equal(401);
      const deleted = await box.request('DELETE', '/Client/orders', {
        headers: { Cookie: cookieHeader, Origin: 'https://attacker.example' },
      });
      expect(deleted.status).to.equal(401);
      expect((await box.json('GET', '/Client/evil', undefined, root)).status).to.equal(404);
      expect((await box.json('GET', '/AccessPolicy/evil-allow', undefined, root)).status).to.equal(404);
      expect((await box.json('GET', '/Client/orders', undefined, root)).status).to.equal(200);
    });

    it('markup and terminal escapes in a client or a policy are shown as inert text', async function () {
      const hostile = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>';
      // Terminal escapes in a description are refused by the box (a name a person reads holds no control character).
      const escaped = await box.json(
        'PUT',
        '/AccessPolicy/wiki-hostile',
        { engine: 'allow', app: 'wiki', description: `${hostile}\u001b[2J\u001b[31mred\u0007` },
        root,
      );
      expect(escaped.status, escaped.text).to.equal(422);
      expect(JSON.stringify(escaped.body.errors)).to.match(/control or invisible character \(U\+001B\)/);
      await box.addClient('hostile', { description: hostile }, { policy: false });
      const policy = await box.json(
        'PUT',
        '/AccessPolicy/wiki-hostile',
        { engine: 'allow', app: 'wiki', description: hostile, link: [{ resourceType: 'Group', id: '<b>ops</b>\u001b[0m' }] },
        root,
      );
      expect(policy.status, policy.text).to.equal(201);
      // A name with markup is refused by the box (422), and its message is text too.
      await openTab('Clients');
      await page.getByRole('list', { name: 'Clients' }).getByRole('button', { name: 'hostile' }).click();
      expect(await page.locator('#client-description').inputValue()).to.equal(hostile);
      await page.getByRole('button', { name: 'New client' }).click();
      await page.locator('#panel-clients').getByLabel('Name').fill('<img src=x onerror="window.pwned=3">');
      await page.locator('#panel-clients').getByRole('button', { name: 'Save' }).click();
      await page.locator('#client-id-error, #client-form-error').filter({ hasText: /./ }).first().waitFor();

      await openTab('Access policies');
      const item = page.getByRole('list', { name: 'Access policies' }).getByRole('button', { name: /^wiki-hostile/ });
      expect(await item.textContent()).to.equal('wiki-hostile · App wiki · group <b>ops</b>\u001b[0m');
      await item.click();
      await page.locator('#policy-links-summary').getByText('group <b>ops</b>', { exact: false }).waitFor();
      await openTab('Apps');
      await page.getByRole('list', { name: 'Apps' }).getByRole('button', { name: /^wiki/ }).click();
      await page.getByRole('list', { name: 'Policies' }).getByText('wiki-hostile: applies to group <b>ops</b>', { exact: false }).waitFor();

      expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).to.equal(undefined);
      expect(await page.locator('#app b, #app img:not([alt]), #app script').count()).to.equal(0);
    });
  });

  describe('a delegated admin of one App', function () {
    let other: Page;
    before(async function () {
      const owner = await box.json('POST', '/users', { email: 'wiki-owner@example.com', password: 'wiki-owner-password' }, root);
      expect(owner.status, owner.text).to.equal(201);
      // The App wiki, its policies, its refusals and their explanations: nothing else of the box.
      const policy = await box.json(
        'PUT',
        '/AccessPolicy/wiki-owner',
        {
          engine: 'matcho',
          description: 'The owner of the wiki reads it and its policies, refusals included',
          link: [{ resourceType: 'User', id: String(owner.body.id) }],
          matcho: {
            '$one-of': [
              { 'request-method': { $enum: ['get', 'put'] }, params: { 'resource/type': 'App', 'resource/id': 'wiki' } },
              { 'request-method': 'get', params: { 'resource/type': 'AccessPolicy', 'resource/id': 'nil?', app: 'wiki' } },
              { 'request-method': 'get', uri: '#^/authz/decisions(/|$)', params: { app: 'wiki' } },
            ],
          },
        },
        root,
      );
      expect(policy.status, policy.text).to.equal(201);
      other = await browser.newPage({ viewport: { width: 1200, height: 900 } });
      await signIn(other, 'wiki-owner@example.com', 'wiki-owner-password');
    });
    after(async function () {
      await other?.close();
    });

    it('sees the App wiki, its policies and refusals; the box-wide tabs say they are not theirs, and nothing breaks', async function () {
      await other.getByText(/may not manage this box/).waitFor();
      await other.getByRole('tab', { name: 'Clients' }).click();
      await other.locator('#clients-error').getByText("You may not see this box's clients: no AccessPolicy of yours allows it.").waitFor();
      await other.getByRole('tab', { name: 'Access policies' }).click();
      await other
        .locator('#policies-error')
        .getByText(/^You may not list every policy of this box/)
        .waitFor();
      await other.locator('#policies-app').fill('wiki');
      await other
        .getByRole('list', { name: 'Access policies' })
        .getByRole('button', { name: /^wiki-readers/ })
        .waitFor();
      expect(await other.locator('#policies-error').textContent()).to.equal('');
      expect(
        await other
          .getByRole('list', { name: 'Access policies' })
          .getByRole('button', { name: /^root-allow/ })
          .count(),
      ).to.equal(0);

      await other.getByRole('tab', { name: 'Apps' }).click();
      await other
        .locator('#apps-error')
        .getByText(/^You may not list this box's Apps/)
        .waitFor();
      await other.getByLabel('Open the App').fill('wiki');
      await other.getByRole('button', { name: 'Open' }).click();
      await other.getByRole('list', { name: 'Hosts' }).getByText('https://wiki.example').waitFor();
      await other.getByRole('list', { name: 'Policies' }).getByText('wiki-readers: applies to client reader').waitFor();
      await other
        .locator('#app-refusals-rows')
        .getByRole('button', { name: /^Explain the refusal of / })
        .first()
        .click();
      await other
        .locator('#app-explain-verdict')
        .getByText(/^Denied \(403\)/)
        .waitFor();

      // Another App is not theirs: its record, policies and refusals are refused.
      await other.getByLabel('Open the App').fill('payroll');
      await other.getByRole('button', { name: 'Open' }).click();
      await other.locator('#app-error').getByText('You may not see the App payroll: no AccessPolicy of yours allows it.').waitFor();
      const elsewhere = [
        '/App/payroll',
        '/AccessPolicy?app=payroll',
        '/AccessPolicy?app=wiki&app=payroll', // a parameter given twice is a list, which "wiki" does not match
        '/authz/decisions?app=payroll',
        '/authz/decisions?app=wiki&app=payroll',
        '/AccessPolicy',
        '/AccessPolicy/root-allow?app=wiki',
        '/Client',
      ];
      for (const path of elsewhere)
        expect(
          await other.evaluate(
            async (p) => (await fetch(p, { headers: { Authorization: `Bearer ${sessionStorage.getItem('boxauth.token')}` } })).status,
            path,
          ),
          path,
        ).to.equal(403);
      await other.getByRole('tab', { name: 'Users' }).click();
      expect(await other.getByRole('list', { name: 'Users' }).textContent()).to.equal('You may not see these.');
    });
  });
});
