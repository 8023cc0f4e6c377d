// The admin console's Hooks tab in Chromium (docs/guides/admin-console.md, docs/guides/hooks.md):
// a Hook made in the console (its moments, URL, failure policy, settings and signing secret),
// changed with its secret kept, a Kubernetes-owned one read-only, one deleted. Each change is
// checked through the REST API; the secret typed is in no answer nor the page once saved.
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import pg from 'pg';
import type { Browser, Page } from 'playwright-core';
import { Box } from '../support/box.js';
import { launchBrowser, screenshot } from '../support/browser.js';

describe('admin console: Hooks (Chromium)', function () {
  this.timeout(120_000);
  let box: Box;
  let browser: Browser;
  let page: Page;
  let root: string;
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const api = async (path: string): Promise<any> => (await box.json('GET', path, undefined, root)).body;

  async function sql<T>(text: string, params: unknown[] = []): Promise<T[]> {
    const db = new pg.Client({ connectionString: box.databaseUrl });
    await db.connect();
    try {
      return (await db.query(text, params)).rows as T[];
    } finally {
      await db.end();
    }
  }
  const sealed = async (id: string): Promise<string> =>
    (await sql<{ s: string }>('SELECT encode(secret_sealed, $2) AS s FROM hooks WHERE id = $1', [id, 'hex']))[0]!.s;

  /** The tab opened afresh (the page reloaded: what it shows is what the API answers now). */
  async function openHooks(): Promise<void> {
    await page.reload();
    await page.getByRole('tab', { name: 'Users' }).waitFor();
    await page.getByRole('tab', { name: 'Hooks', exact: true }).click();
  }

  before(async function () {
    [box, browser] = await Promise.all([
      Box.start({ env: { BOXAUTH_ADMIN_EMAIL: 'admin@example.com', BOXAUTH_ADMIN_PASSWORD: 'admin-password' } }),
      launchBrowser(),
    ]);
    root = await box.rootToken();
    page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    await page.goto(`${box.url}/admin`);
    await page.getByLabel('Email').fill('admin@example.com');
    await page.getByLabel('Password').fill('admin-password');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('tab', { name: 'Users' }).waitFor();
  });
  after(async function () {
    await browser?.close();
    await box?.stop();
  });

  it('makes a Hook: its moments, URL, failure policy, settings and a signing secret never shown again', async function () {
    await page.getByRole('tab', { name: 'Hooks', exact: true }).click();
    await page.getByRole('button', { name: 'New hook' }).click();
    const panel = page.locator('#panel-hooks');
    await panel.getByLabel('Name').fill('licence');
    await panel.getByLabel('Description').fill('The billing system’s licences');
    await panel.getByRole('checkbox', { name: 'An access token' }).check();
    await panel.getByRole('checkbox', { name: 'An ID token' }).check();
    await panel.getByLabel('URL').fill('https://hooks.example/token');
    await panel.getByLabel('Failure policy').selectOption('Ignore');
    await panel.getByLabel('Settings').fill('{"timeoutSeconds": 3, "maxInFlight": 4}');
    await panel.getByLabel('Signing secret').fill(secret);
    await panel.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved licence.').waitFor();
    await page.getByRole('list', { name: 'Hooks' }).getByRole('button', { name: 'licence' }).waitFor();
    const stored = await api('/Hook/licence');
    expect(stored).to.deep.include({
      moments: ['tokenIssuing', 'idTokenIssuing'],
      url: 'https://hooks.example/token',
      failurePolicy: 'Ignore',
      timeoutSeconds: 3,
      maxInFlight: 4,
      description: 'The billing system’s licences',
    });
    expect(stored).to.not.have.property('secret');
    expect(await panel.getByLabel('Signing secret').inputValue()).to.equal('');
    expect(await page.content()).to.not.include(secret.slice(6));
    await screenshot(page, 'admin-hooks');
  });

  it('changes a Hook with the secret field empty: the secret the box holds is kept', async function () {
    const before = await sealed('licence');
    await openHooks();
    await page.getByRole('list', { name: 'Hooks' }).getByRole('button', { name: 'licence' }).click();
    await page.getByRole('heading', { name: 'Edit licence' }).waitFor();
    const panel = page.locator('#panel-hooks');
    expect(await panel.getByRole('checkbox', { name: 'An access token' }).isChecked()).to.equal(true);
    expect(await panel.getByLabel('Settings').inputValue()).to.include('"timeoutSeconds": 3');
    await panel.getByRole('checkbox', { name: 'Signing in' }).check();
    await panel.getByLabel('Failure policy').selectOption('Fail');
    await panel.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved licence.').waitFor();
    expect(await api('/Hook/licence')).to.deep.include({ moments: ['signingIn', 'tokenIssuing', 'idTokenIssuing'], failurePolicy: 'Fail' });
    expect(await sealed('licence')).to.equal(before);
  });

  it("shows the box's refusal under the form: a Hook nobody can check (no secret, no boxToken)", async function () {
    await openHooks();
    await page.getByRole('button', { name: 'New hook' }).click();
    const panel = page.locator('#panel-hooks');
    await panel.getByLabel('Name').fill('unchecked');
    await panel.getByRole('checkbox', { name: 'An access token' }).check();
    await panel.getByLabel('URL').fill('https://hooks.example/x');
    await panel.getByRole('button', { name: 'Save' }).click();
    await panel
      .getByText(/boxToken/)
      .first()
      .waitFor();
    expect((await box.json('GET', '/Hook/unchecked', undefined, root)).status).to.equal(404);
  });

  it('a Hook a Kubernetes resource owns is read-only and names its owner; Delete removes another', async function () {
    const made = await box.json('PUT', '/Hook/k8s-risk', { moments: ['signingIn'], url: 'https://risk.example/', boxToken: true }, root);
    expect(made.status, made.text).to.equal(201);
    await sql("UPDATE hooks SET managed_by = 'Hook team-a/risk' WHERE id = 'k8s-risk'");
    await openHooks();
    await page
      .getByRole('list', { name: 'Hooks' })
      .getByRole('button', { name: /^k8s-risk/ })
      .click();
    const panel = page.locator('#panel-hooks');
    await panel.getByText('Managed by the Kubernetes resource Hook team-a/risk: read-only here.').waitFor();
    expect(await panel.getByRole('button', { name: 'Save' }).isDisabled()).to.equal(true);
    await page.getByRole('list', { name: 'Hooks' }).getByRole('button', { name: 'licence' }).click();
    await panel.getByRole('button', { name: 'Delete' }).click();
    await page.getByText('Deleted licence.').waitFor();
    expect((await box.json('GET', '/Hook/licence', undefined, root)).status).to.equal(404);
  });
});
