// The admin console's Keys and Settings tabs in Chromium: a key rotated from the console (the new
// one active, a token issued before still working), the settings shown without a secret, and an
// admin whose policies do not open them told so in the tab, the rest of the console working.
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { decodeProtectedHeader } from 'jose';
import type { Browser, Page } from 'playwright-core';
import { Box, basic } from '../support/box.js';
import { launchBrowser, screenshot } from '../support/browser.js';

describe('admin console: Keys and Settings (Chromium)', function () {
  this.timeout(90_000);
  const adminPassword = `admin-${randomBytes(8).toString('hex')}`;
  let box: Box;
  let browser: Browser;
  let page: Page;
  let root: string;

  before(async function () {
    [box, browser] = await Promise.all([
      Box.start({ env: { BOXAUTH_ADMIN_EMAIL: 'admin@example.com', BOXAUTH_ADMIN_PASSWORD: adminPassword } }),
      launchBrowser(),
    ]);
    root = await box.rootToken();
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  });
  after(async function () {
    await browser?.close();
    await box?.stop();
  });

  async function signIn(on: Page, email: string, password: string): Promise<void> {
    await on.goto(`${box.url}/admin`);
    await on.getByLabel('Email').fill(email);
    await on.getByLabel('Password').fill(password);
    await on.getByRole('button', { name: 'Sign in', exact: true }).click();
    await on.getByRole('tab', { name: 'Users' }).waitFor();
  }

  const activeKid = async (alg: string): Promise<string> =>
    ((await box.json('GET', '/keys', undefined, root)).body.keys as { kid: string; alg: string; state: string }[]).find(
      (k) => k.alg === alg && k.state === 'active',
    )!.kid;

  it('Keys tab: Rotate, confirmed, makes a new key active; a token issued before still works', async function () {
    const { secret } = await box.addClient('reader', {
      auth: { client_credentials: { token_format: 'jwt', access_token_expiration: 600 } },
    });
    const before = (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('reader', secret) })).body
      .access_token as string;
    const oldKid = await activeKid('ES256');
    expect(decodeProtectedHeader(before).kid).to.equal(oldKid);

    await signIn(page, 'admin@example.com', adminPassword);
    await page.getByRole('tab', { name: 'Keys' }).click();
    const table = page.getByRole('table', { name: 'Signing keys, newest first' });
    await table.getByRole('cell', { name: oldKid }).waitFor();
    expect(await table.getByRole('row').filter({ hasText: oldKid }).getByRole('cell').nth(2).textContent()).to.equal('active');
    expect(await page.getByLabel('Algorithm').inputValue()).to.equal('ES256'); // the access tokens' algorithm

    // Dismissed: nothing happens.
    page.once('dialog', (dialog) => void dialog.dismiss());
    await page.getByRole('button', { name: 'Rotate' }).click();
    expect(await activeKid('ES256')).to.equal(oldKid);

    let asked = '';
    page.once('dialog', (dialog) => {
      asked = dialog.message();
      void dialog.accept();
    });
    await page.getByRole('button', { name: 'Rotate' }).click();
    await page.getByText(/^Rotated the ES256 key: /).waitFor();
    expect(asked).to.include('Tokens the current key signed keep working until they expire');
    const newKid = await activeKid('ES256');
    expect(newKid).not.to.equal(oldKid);
    const cells = (kid: string) => table.getByRole('row').filter({ hasText: kid }).getByRole('cell');
    expect(await cells(newKid).nth(2).textContent()).to.equal('active');
    expect(await cells(oldKid).nth(2).textContent()).to.equal('retired');
    expect(await cells(oldKid).nth(6).textContent()).to.match(/^until .+ at least$/);
    await screenshot(page, 'admin-keys');

    // The token signed by the retired key still works; a new one is signed by the new key.
    expect((await box.json('GET', '/users', undefined, before)).status).to.equal(200);
    const after = (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('reader', secret) })).body
      .access_token as string;
    expect(decodeProtectedHeader(after).kid).to.equal(newKid);
    // And the console's own token, issued before the rotation, goes on working.
    await page.getByRole('tab', { name: 'Users' }).click();
    await page.getByRole('button', { name: 'admin@example.com' }).waitFor();
  });

  it('Settings tab: the lifetimes, read-only, and no secret', async function () {
    await page.getByRole('tab', { name: 'Settings' }).click();
    const sessions = page.getByRole('table', { name: 'Sessions' });
    await sessions.waitFor();
    expect(
      await sessions
        .getByRole('row', { name: /browser session hours/ })
        .getByRole('cell')
        .textContent(),
    ).to.equal('12');
    const tokens = page.getByRole('table', { name: 'Tokens' });
    expect(
      await tokens
        .getByRole('row', { name: /authorization code seconds/ })
        .getByRole('cell')
        .textContent(),
    ).to.equal('60');
    expect(
      await tokens
        .getByRole('row', { name: /id token default seconds/ })
        .getByRole('cell')
        .textContent(),
    ).to.equal('3600');
    expect(await page.locator('#panel-settings input, #panel-settings button, #panel-settings textarea').count()).to.equal(0);
    const text = (await page.locator('#panel-settings').textContent()) ?? '';
    for (const secret of [adminPassword, box.rootSecret, decodeURIComponent(new URL(box.databaseUrl!).password)])
      expect(text).not.to.include(secret);
    await screenshot(page, 'admin-settings');
  });

  it('an admin whose policies do not open the keys or the settings is told so in each tab; the others work', async function () {
    const group = await box.json('POST', '/groups', { name: 'helpdesk' }, root);
    await box.json(
      'PUT',
      '/AccessPolicy/helpdesk-reads-people',
      {
        engine: 'matcho',
        link: [{ id: 'helpdesk', resourceType: 'Group' }],
        matcho: { 'request-method': 'get', uri: '#^/(users|groups)' },
      },
      root,
    );
    await box.json('POST', '/users', { email: 'desk@example.com', password: 'desk-password', 'group-ids': [group.body.id] }, root);
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      const desk = await context.newPage();
      await signIn(desk, 'desk@example.com', 'desk-password');
      await desk.getByRole('tab', { name: 'Keys' }).click();
      await desk.getByText('You may not see the signing keys: no AccessPolicy allows GET /keys for your account.').waitFor();
      expect(await desk.getByRole('button', { name: 'Rotate' }).isVisible()).to.equal(false);
      await desk.getByRole('tab', { name: 'Settings' }).click();
      await desk.getByText("You may not see the box's settings: no AccessPolicy allows GET /settings for your account.").waitFor();
      await desk.getByRole('tab', { name: 'Users' }).click();
      await desk.getByRole('list', { name: 'Users' }).getByRole('button', { name: 'desk@example.com' }).waitFor();
    } finally {
      await context.close();
    }
  });
});
