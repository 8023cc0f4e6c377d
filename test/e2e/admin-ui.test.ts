// The admin UI in Chromium: signed in through the box's own code flow, a group
// and a user created, filtered, edited and deleted — each change checked
// through the REST API.
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { addDummyPasskey } from '../support/factors.js';
import { Box, eventually } from '../support/box.js';
import { launchBrowser, screenshot } from '../support/browser.js';

describe('admin UI (Chromium)', function () {
  this.timeout(90_000);
  let box: Box;
  let browser: Browser;
  let page: Page;
  let root: string;
  const api = async (path: string): Promise<any> => (await box.json('GET', path, undefined, root)).body;

  before(async function () {
    [box, browser] = await Promise.all([
      Box.start({ env: { BOXAUTH_ADMIN_EMAIL: 'admin@example.com', BOXAUTH_ADMIN_PASSWORD: 'admin-password' } }),
      launchBrowser(),
    ]);
    root = await box.rootToken();
    page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
  });
  after(async function () {
    await browser?.close();
    await box?.stop();
  });

  it("signs in through the box's own flow, as a member of admins", async function () {
    await page.goto(`${box.url}/admin`);
    await page.getByLabel('Email').fill('admin@example.com');
    await page.getByLabel('Password').fill('admin-password');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('tab', { name: 'Users' }).waitFor();
    expect(page.url()).to.equal(`${box.url}/admin`); // the code is gone from the address bar
    expect(await page.getByRole('button', { name: 'admin@example.com' }).isVisible()).to.equal(true);
    const sessions = (await api('/Session?client=boxauth-admin&active=true')).entry;
    expect(sessions).to.have.length(1);
    expect(sessions[0].resource.type).to.equal('authorization_code');
  });

  it('Groups tab: creates a group with Name and Description', async function () {
    await page.getByRole('tab', { name: 'Groups' }).click();
    await page.getByLabel('Name').fill('editors');
    await page.getByLabel('Description').fill('People who edit');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved editors.').waitFor();
    await screenshot(page, 'admin-groups');
    const groups = await api('/groups?name=editors');
    expect(groups).to.have.length(1);
    expect(groups[0].description).to.equal('People who edit');
  });

  it('Users tab: Data is checked before sending, 422 messages show next to the field, then the user is created in the group', async function () {
    await page.getByRole('tab', { name: 'Users' }).click();
    await page.getByRole('button', { name: 'New user' }).click();
    expect(await page.getByRole('checkbox', { name: 'Email verified' }).isChecked()).to.equal(true); // an address the admin enters
    await page.getByLabel('Email', { exact: true }).fill('zoe@example.com');
    await page.getByLabel('Password').fill('zoe-password');
    await page.getByLabel('Data').fill('{not json');
    await page.getByRole('button', { name: 'Save' }).click();
    expect(await page.locator('#user-data-error').textContent()).to.equal('Data must be valid JSON.');
    expect(await api('/users?email=zoe@example.com')).to.deep.equal([]);

    await page.getByLabel('Data').fill('{"team": "blue"}');
    await page.getByLabel('Password').fill('short');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.locator('#user-password-error').getByText('must be at least 8 characters').waitFor();
    expect(await page.locator('#user-password-error').getAttribute('role')).to.equal('alert');

    await page.getByLabel('Password').fill('zoe-password');
    await page.getByRole('group', { name: 'Groups' }).getByLabel('editors').check();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved zoe@example.com.').waitFor();
    await screenshot(page, 'admin-users');
    const [zoe] = await api('/users?email=zoe@example.com');
    expect(zoe.data).to.equal('{"team": "blue"}');
    expect(zoe.groups.map((g: any) => g.name)).to.deep.equal(['editors']);
    expect(zoe.email_verified).to.equal(true);
  });

  it('a taken email is shown next to Email, and the status line no longer says the last save', async function () {
    expect(await page.locator('#app-status').textContent()).to.match(/^Saved /); // the previous test's save
    await page.getByRole('button', { name: 'New user' }).click();
    await page.getByLabel('Email', { exact: true }).fill('ZOE@example.com');
    await page.getByLabel('Password').fill('another-password');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.locator('#user-email-error').getByText('email is already taken').waitFor();
    expect(await page.locator('#app-status').textContent()).to.equal('');
  });

  it('the filter narrows the list as each character is typed', async function () {
    await box.json('POST', '/users', { email: 'yann@example.com', password: 'yann-password' }, root);
    await page.reload();
    await page.getByRole('tab', { name: 'Users' }).waitFor();
    const list = page.getByRole('list', { name: 'Users' });
    await list.getByRole('button', { name: 'yann@example.com' }).waitFor();
    const filter = page.getByRole('searchbox', { name: 'Filter' }).first();
    const counts: number[] = [];
    for (const ch of 'zo') {
      await filter.press(ch);
      counts.push(await list.getByRole('button').count());
    }
    expect(counts[0]).to.equal(1); // "z": only zoe
    expect(await list.getByRole('button').allTextContents()).to.deep.equal(['zoe@example.com']);
    await filter.fill('');
    expect(await list.getByRole('button').count()).to.equal(3);
  });

  it('select a record, change it, Save: the change is in the API', async function () {
    await page.getByRole('list', { name: 'Users' }).getByRole('button', { name: 'zoe@example.com' }).click();
    expect(await page.getByLabel('Email', { exact: true }).inputValue()).to.equal('zoe@example.com');
    await page.getByLabel('Email', { exact: true }).fill('zoe.renamed@example.com');
    await page.getByRole('group', { name: 'Groups' }).getByLabel('editors').uncheck();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved zoe.renamed@example.com.').waitFor();
    const [zoe] = await api('/users?email=zoe.renamed@example.com');
    expect(zoe.groups).to.deep.equal([]);
    expect(await api('/users?email=zoe@example.com')).to.deep.equal([]);
  });

  it('select a record, Delete: removed without confirmation', async function () {
    await page.getByRole('list', { name: 'Users' }).getByRole('button', { name: 'yann@example.com' }).click();
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByText('Deleted yann@example.com.').waitFor();
    expect(await api('/users?email=yann@example.com')).to.deep.equal([]);
    await page.getByRole('tab', { name: 'Groups' }).click();
    await page.getByRole('list', { name: 'Groups' }).getByRole('button', { name: 'editors' }).click();
    await page.getByRole('button', { name: 'Delete' }).last().click();
    await page.getByText('Deleted editors.').waitFor();
    expect(await api('/groups?name=editors')).to.deep.equal([]);
  });

  it('Email verified shows what the box says of the address, and a Save of another field keeps it', async function () {
    const self = (await box.json('POST', '/users', { email: 'self@example.com', password: 'self-password', email_verified: false }, root))
      .body;
    await page.reload();
    await page.getByRole('tab', { name: 'Users' }).waitFor();
    await page.getByRole('list', { name: 'Users' }).getByRole('button', { name: 'self@example.com' }).click();
    const verified = page.getByRole('checkbox', { name: 'Email verified' });
    expect(await verified.isChecked()).to.equal(false);
    await page.getByLabel('Data').fill('{"team": "red"}');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved self@example.com.').waitFor();
    expect(await api(`/users/${self.id}`)).to.include({ data: '{"team": "red"}', email_verified: false });
    expect(await verified.isChecked()).to.equal(false);
    await screenshot(page, 'admin-user-unverified');

    await verified.check();
    await page.getByRole('button', { name: 'Save' }).click();
    await eventually('the address verified', async () => (await api(`/users/${self.id}`)).email_verified === true);
  });

  it('works from the keyboard: tabs with arrow keys, forms with Tab and Enter', async function () {
    await page.getByRole('tab', { name: 'Groups' }).focus();
    await page.keyboard.press('ArrowLeft');
    expect(await page.getByRole('tab', { name: 'Users' }).getAttribute('aria-selected')).to.equal('true');
    await page.getByRole('button', { name: 'New user' }).focus();
    await page.keyboard.press('Enter');
    await page.keyboard.type('kim@example.com');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.id)).to.equal('user-email_verified');
    await page.keyboard.press('Tab');
    await page.keyboard.type('kim-password');
    await page.keyboard.press('Enter'); // submits the form
    await page.getByText('Saved kim@example.com.').waitFor();
    expect(await api('/users?email=kim@example.com')).to.have.length(1);
  });

  it("a group that requires a second factor; a person's factors shown, and reset after a confirmation", async function () {
    await page.reload();
    await page.getByRole('tab', { name: 'Groups' }).click();
    await page.getByRole('button', { name: 'New group' }).click();
    await page.getByLabel('Name').fill('operators');
    await page.getByRole('checkbox', { name: 'Require a second factor' }).check();
    await page.getByRole('button', { name: 'Save' }).last().click();
    await page.getByText('Saved operators.').waitFor();
    const [operators] = await api('/groups?name=operators');
    expect(operators.require_second_factor).to.equal(true);
    expect(await page.getByRole('list', { name: 'Groups' }).getByRole('button', { name: 'operators' }).textContent()).to.equal(
      'operators second factor',
    );

    const lee = (await box.json('POST', '/users', { email: 'lee@example.com', password: 'lee-password' }, root)).body;
    await addDummyPasskey(box.databaseUrl!, lee.id, 'work laptop');
    await page.reload();
    await page.getByRole('tab', { name: 'Users' }).waitFor();
    await page.getByRole('list', { name: 'Users' }).getByRole('button', { name: 'lee@example.com' }).click();
    const factors = page.getByRole('list', { name: 'Second factors' });
    await factors.getByText('Passkey “work laptop” · never used').waitFor();
    await screenshot(page, 'admin-user-factors');

    // Dismissed: nothing changes.
    page.once('dialog', (dialog) => void dialog.dismiss());
    await page.getByRole('button', { name: 'Reset second factors' }).click();
    expect((await api(`/users/${lee.id}/factors`)).factors).to.have.length(1);

    page.once('dialog', (dialog) => {
      expect(dialog.message()).to.include('Reset the second factors of lee@example.com?');
      void dialog.accept();
    });
    await page.getByRole('button', { name: 'Reset second factors' }).click();
    await page.getByText('Reset the second factors of lee@example.com.').waitFor();
    await factors.getByText('None.').waitFor();
    await page.getByText('Enrols a second factor at the next sign-in.').waitFor();
    expect(await api(`/users/${lee.id}/factors`)).to.include({ must_enrol: true, recovery_codes_left: 0 });
  });

  it('a user who is not an admin is told so', async function () {
    await box.json('POST', '/users', { email: 'plain@example.com', password: 'plain-password' }, root);
    const other = await browser.newPage();
    try {
      await other.goto(`${box.url}/admin`);
      await other.getByLabel('Email').fill('plain@example.com');
      await other.getByLabel('Password').fill('plain-password');
      await other.getByRole('button', { name: 'Sign in', exact: true }).click();
      await other.getByText(/may not manage this box/).waitFor();
    } finally {
      await other.close();
    }
  });
});
