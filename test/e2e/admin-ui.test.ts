// The admin UI in Chromium: signed in through the box's own code flow, a group
// and a user created, filtered, edited and deleted — each change checked
// through the REST API. (The screenshots of the docs come from test/e2e/admin-people.test.ts.)
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { addDummyPasskey } from '../support/factors.js';
import { Box, basic, eventually } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';
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
    await page.locator('#panel-groups').getByLabel('Name').fill('editors');
    await page.locator('#panel-groups').getByLabel('Description').fill('People who edit');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved editors.').waitFor();
    await screenshot(page, 'admin-group-created');
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
    await page.locator('#user-password-error').getByText('is too short: at least 8 characters').waitFor();
    expect(await page.locator('#user-password-error').getAttribute('role')).to.equal('alert');

    await page.getByLabel('Password').fill('zoe-password');
    await page.getByRole('group', { name: 'Groups' }).getByLabel('editors').check();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved zoe@example.com.').waitFor();
    await screenshot(page, 'admin-user-created');
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

    // Vouching for an address nobody proved adopts the account: the page asks first, and says what ends.
    await verified.check();
    let asked = '';
    page.once('dialog', (dialog) => {
      asked = dialog.message();
      void dialog.accept();
    });
    await page.getByRole('button', { name: 'Save' }).click();
    await eventually('the address verified', async () => (await api(`/users/${self.id}`)).email_verified === true);
    expect(asked)
      .to.include('Vouch for \u2068self@example.com\u2069?')
      .and.include('password, second factors, linked providers and every sign-in end');
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

  it('the Identity providers tab lists the providers, read-only and without their secrets', async function () {
    await page.getByRole('tab', { name: 'Identity providers' }).click();
    const table = page.getByRole('table', { name: 'Identity providers' });
    await table.getByText(/^No identity providers/).waitFor();
    const put = async (id: string, body: object): Promise<void> => {
      const res = await box.json('PUT', `/IdentityProvider/${id}`, body, root);
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
    };
    await put('corp-sso', {
      type: 'oidc',
      displayName: 'Corp SSO',
      oidc: { issuer: 'https://sso.corp.example', clientId: 'boxauth' },
      secret: 'the-corp-client-secret',
    });
    await put('old-ldap', {
      type: 'ldap',
      disabled: true,
      ldap: { url: 'ldaps://ldap.corp.example', userSearch: { baseDN: 'dc=corp', usernameAttribute: 'uid' } },
    });
    await page.getByRole('tab', { name: 'Users' }).click();
    await page.getByRole('tab', { name: 'Identity providers' }).click();
    await table.getByRole('cell', { name: 'corp-sso', exact: true }).waitFor();
    const rows = await table.getByRole('row').allInnerTexts();
    expect(rows.map((r) => r.split('\t').map((c) => c.trim()))).to.deep.equal([
      ['ID', 'Type', 'Display name', 'Disabled', 'Managed by'],
      ['corp-sso', 'oidc', 'Corp SSO', 'no', ''],
      ['old-ldap', 'ldap', 'old-ldap', 'yes', ''],
    ]);
    expect(await page.content()).to.not.include('the-corp-client-secret');
    await screenshot(page, 'admin-identity-providers');
  });

  it("a group that requires a second factor; a person's factors shown, and reset after a confirmation", async function () {
    await page.reload();
    await page.getByRole('tab', { name: 'Groups' }).click();
    await page.getByRole('button', { name: 'New group' }).click();
    await page.locator('#panel-groups').getByLabel('Name').fill('operators');
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
      expect(dialog.message()).to.include('Reset the second factors of \u2068lee@example.com\u2069?');
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

  describe("people's sessions", function () {
    const REDIRECT = 'https://app.example/cb';
    const authorize = `/auth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'app', redirect_uri: REDIRECT })}`;

    before(async function () {
      await box.addClient(
        'app',
        {
          grant_types: ['authorization_code'],
          first_party: true,
          auth: { authorization_code: { redirect_uri: REDIRECT, refresh_token: true } },
        },
        { secret: 'app-secret-123', policy: false },
      );
    });

    /** A person's browser signed in, and the refresh token of a grant to `app` it obtained. */
    async function signedIn(email: string): Promise<{ browser: FormAgent; refreshToken: string }> {
      await box.json('POST', '/users', { email, password: 'session-password' }, root);
      const agent = new FormAgent(box);
      expect((await agent.signIn(email, 'session-password')).status).to.equal(303);
      const code = new URL((await agent.get(authorize)).headers.get('location')!).searchParams.get('code')!;
      const granted = await box.form(
        '/auth/token',
        { grant_type: 'authorization_code', code, redirect_uri: REDIRECT },
        { Authorization: basic('app', 'app-secret-123') },
      );
      expect(granted.status, granted.text).to.equal(200);
      return { browser: agent, refreshToken: granted.body.refresh_token };
    }
    const refreshes = async (refreshToken: string): Promise<boolean> =>
      (
        await box.form(
          '/auth/token',
          { grant_type: 'refresh_token', refresh_token: refreshToken },
          { Authorization: basic('app', 'app-secret-123') },
        )
      ).status === 200;

    it("an admin sees a person's sessions and ends them: the person's browser is signed out and their refresh token refused", async function () {
      const sam = await signedIn('sam@example.com');
      await page.reload();
      await page.getByRole('tab', { name: 'Users' }).waitFor();
      await page.getByRole('list', { name: 'Users' }).getByRole('button', { name: 'sam@example.com' }).click();
      const browsers = page.getByRole('list', { name: 'Signed-in browsers' });
      const apps = page.getByRole('list', { name: 'Apps' });
      await browsers.getByText(/^Since .* · password/).waitFor();
      await apps.getByText(/^app · since .* · password$/).waitFor();
      expect(await page.getByText('Verified: by its link, or vouched for by an administrator.').isVisible()).to.equal(true);

      await browsers.getByRole('button', { name: /^End the browser session since / }).click();
      await page.getByText('Signed out a browser of sam@example.com.').waitFor();
      await browsers.getByText('None.').waitFor();
      await apps.getByText('None.').waitFor(); // the grant came through that browser: it ended too
      expect((await sam.browser.get(authorize)).status, 'the browser is shown the sign-in page again').to.equal(200);
      expect(await refreshes(sam.refreshToken)).to.equal(false);

      // End all sessions, after a confirmation.
      const again = await signedIn('sam2@example.com');
      await page.reload();
      await page.getByRole('tab', { name: 'Users' }).waitFor();
      await page.getByRole('list', { name: 'Users' }).getByRole('button', { name: 'sam2@example.com' }).click();
      await apps.getByText(/^app · since/).waitFor();
      page.once('dialog', (dialog) => {
        expect(dialog.message()).to.include('End every session of \u2068sam2@example.com\u2069?');
        void dialog.accept();
      });
      await page.getByRole('button', { name: 'End all sessions' }).click();
      await page.getByText('Ended every session of sam2@example.com.').waitFor();
      expect(await refreshes(again.refreshToken)).to.equal(false);
      expect((await again.browser.get(authorize)).status).to.equal(200);
    });

    it('the Sessions tab lists the live grants, the filter narrows them, and End ends one', async function () {
      const ann = await signedIn('ann.sessions@example.com');
      await signedIn('bob.sessions@example.com');
      await page.getByRole('tab', { name: 'Sessions' }).click();
      const table = page.getByRole('table', { name: /live grants/ });
      await table.getByRole('cell', { name: 'bob.sessions@example.com', exact: true }).waitFor();
      const filter = page.locator('#panel-sessions').getByRole('searchbox', { name: 'Filter' });
      await filter.fill('ANN.');
      await eventually('the list narrowed', async () => (await table.getByRole('row').count()) === 2); // the header and ann's grant
      expect(await table.getByRole('cell', { name: 'ann.sessions@example.com', exact: true }).isVisible()).to.equal(true);
      expect(await table.getByRole('cell', { name: 'bob.sessions@example.com', exact: true }).count()).to.equal(0);
      await page.getByText('1 live grant.').waitFor();
      await page.locator('#panel-sessions').getByRole('combobox', { name: 'Client' }).fill('boxauth-admin');
      await table.getByText('Nothing matches the filter.').waitFor();
      await page.locator('#panel-sessions').getByRole('combobox', { name: 'Client' }).fill('');
      await filter.fill('.sessions@');
      await table.getByRole('cell', { name: 'bob.sessions@example.com', exact: true }).waitFor();
      await screenshot(page, 'admin-sessions-grants');

      await filter.fill('ann.');
      await page.getByText('1 live grant.').waitFor();
      await table.getByRole('button', { name: 'End the grant of ann.sessions@example.com to app' }).click();
      await page.getByText('Ended a grant of ann.sessions@example.com to app.').waitFor();
      await table.getByText('Nothing matches the filter.').waitFor();
      expect(await refreshes(ann.refreshToken)).to.equal(false);
      expect((await ann.browser.get(authorize)).status, 'a grant ended, the browser stays signed in').to.equal(302);
    });
  });
});
