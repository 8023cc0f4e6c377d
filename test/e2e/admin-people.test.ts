// The admin console's people in Chromium (issue 51): a person turned off and on (their browser
// signed out, their sign-in refused, then let in again), what their directory wrote of them shown
// read-only, a linked identity unlinked, a group's members added and removed, and a signed-in
// browser ended from the Sessions tab — each checked through the REST API or the person's own
// browser. Then the attacks: names and data holding markup or terminal escapes are shown as inert
// text, and an admin whose policies allow only reading people is told, in each place, what they
// may not see, while the rest works. The screenshots docs/screenshots/admin-users.png,
// admin-groups.png and admin-sessions.png come from here (test-artifacts/).
import argon2 from 'argon2';
import { expect } from 'chai';
import pg from 'pg';
import type { Browser, Locator, Page } from 'playwright-core';
import { Box, eventually } from '../support/box.js';
import { codeClient } from '../support/code-client.js';
import { FormAgent } from '../support/form-agent.js';
import { launchBrowser, screenshot } from '../support/browser.js';
import { linkDummyIdentity } from '../support/identities.js';

const PASSWORD = 'people-password-1';
const SCIM_USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const MARKUP = '<img src=x onerror="window.pwned=true">';

describe('admin console: people (Chromium)', function () {
  this.timeout(120_000);
  let box: Box;
  let browser: Browser;
  let page: Page;
  let root: string;

  before(async function () {
    [box, browser] = await Promise.all([
      Box.start({ env: { BOXAUTH_ADMIN_EMAIL: 'admin@example.com', BOXAUTH_ADMIN_PASSWORD: 'admin-password' } }),
      launchBrowser(),
    ]);
    root = await box.rootToken();
    await rest('PUT', '/IdentityProvider/corp', {
      type: 'oidc',
      displayName: 'Corp SSO',
      oidc: { issuer: 'https://sso.corp.example', clientId: 'boxauth' },
    });
    page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    await signInAs(page, 'admin@example.com', 'admin-password');
  });
  after(async function () {
    await browser?.close();
    await box?.stop();
  });

  async function rest(method: string, path: string, body?: unknown): Promise<any> {
    const res = await box.json(method, path, body, root);
    expect(res.status, `${method} ${path}: ${res.text}`).to.be.oneOf([200, 201, 204]);
    return res.body;
  }
  async function scim(body: unknown): Promise<{ id: string }> {
    const res = await box.request('POST', '/scim/v2/Users', {
      headers: { Authorization: `Bearer ${root}`, 'Content-Type': 'application/scim+json' },
      body: JSON.stringify(body),
    });
    expect(res.status, res.text).to.equal(201);
    return JSON.parse(res.text);
  }
  const person = (email: string): Promise<{ id: number; email: string }> => rest('POST', '/users', { email, password: PASSWORD });
  /** A person's own browser, signed in. */
  async function browserOf(email: string): Promise<FormAgent> {
    const agent = new FormAgent(box);
    expect((await agent.signIn(email, PASSWORD, '/auth/account')).status).to.equal(303);
    return agent;
  }
  const signedIn = async (agent: FormAgent): Promise<boolean> => (await agent.get('/auth/account')).status === 200;

  async function signInAs(on: Page, email: string, password: string): Promise<void> {
    await on.goto(`${box.url}/admin`);
    await on.getByLabel('Email').fill(email);
    await on.getByLabel('Password').fill(password);
    await on.getByRole('button', { name: 'Sign in', exact: true }).click();
    await on.getByRole('tab', { name: 'Users' }).waitFor();
  }
  /** The console reloaded (it reads the people anew), the Users tab open and `email` selected. */
  async function selectPerson(email: string, on = page): Promise<void> {
    await on.reload();
    await on.getByRole('tab', { name: 'Users' }).click();
    await on.getByRole('list', { name: 'Users' }).getByRole('button', { name: email }).click();
    await on.getByRole('heading', { name: `Edit ${email}` }).waitFor();
  }

  /**
   * Whether `words`, text of `where` outside any name, is drawn in the order it is written: each
   * character left of the next (the console is left to right). A bidi override leaking out of a
   * name draws them the other way round.
   */
  const drawnInOrder = (where: Locator, words: string): Promise<boolean> =>
    where.evaluate((element, words) => {
      const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const at = node.textContent!.indexOf(words);
        if (at < 0) continue;
        const lefts = [...words].map((_, i) => {
          const range = document.createRange();
          range.setStart(node, at + i);
          range.setEnd(node, at + i + 1);
          return range.getBoundingClientRect().left;
        });
        return lefts.every((left, i) => i === 0 || left > lefts[i - 1]!);
      }
      throw new Error(`no text of the element holds "${words}"`);
    }, words);

  it('turns a person off: their browser is signed out and their sign-in refused; on again, they sign in', async function () {
    const dee = await person('dee@example.com');
    const hers = await browserOf(dee.email);
    await selectPerson(dee.email);
    const active = page.getByRole('checkbox', { name: 'Active', exact: true });
    expect(await active.isChecked()).to.equal(true);

    await active.uncheck();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved dee@example.com.').waitFor();
    expect((await rest('GET', `/users/${dee.id}`)).active).to.equal(false);
    expect(await signedIn(hers), 'her browser is signed out').to.equal(false);
    expect((await new FormAgent(box).signIn(dee.email, PASSWORD)).status, 'and she cannot sign in').not.to.equal(303);
    const listed = page.getByRole('list', { name: 'Users' }).getByRole('button', { name: 'dee@example.com' });
    expect(await listed.textContent()).to.equal('dee@example.com turned off');
    expect(await active.isChecked()).to.equal(false);
    await page.getByText(/^Turned off .*they cannot sign in until turned on again\.$/).waitFor();

    await active.check();
    await page.getByRole('button', { name: 'Save' }).click();
    await eventually('turned on', async () => (await rest('GET', `/users/${dee.id}`)).active === true);
    expect(await signedIn(await browserOf(dee.email))).to.equal(true);
    expect(await listed.textContent()).to.equal('dee@example.com');
  });

  it("shows what a person's directory wrote of them, read-only, and unlinks a linked identity", async function () {
    const made = await scim({
      schemas: [SCIM_USER],
      userName: 'ann.lee@example.com',
      externalId: 'entra-0001',
      name: { givenName: 'Ann', familyName: 'Lee', formatted: 'Ann Lee' },
      title: 'Engineer',
      password: PASSWORD,
    });
    // The REST API names the person by their row id; SCIM by their public sub (an opaque id on this box).
    const [{ id }] = await rest('GET', '/users?email=ann.lee%40example.com');
    expect(made.id).to.not.equal(String(id));
    await linkDummyIdentity(box.databaseUrl!, id, 'corp', 'corp-subject-ann', 'ann@corp.example');
    await selectPerson('ann.lee@example.com');
    const directory = page.locator('#user-scim-list');
    await directory.getByText('Ann Lee', { exact: true }).waitFor();
    expect((await directory.locator('dt, dd').allTextContents()).join('|')).to.equal(
      'Name|Ann Lee|External id|entra-0001|Active|yes|title|Engineer',
    );
    expect(await page.locator('#user-scim input, #user-scim textarea').count(), 'nothing there to edit').to.equal(0);
    const identities = page.getByRole('list', { name: 'Linked identities' });
    await identities.getByText(/^corp · ann@corp\.example · linked .*, last used /).waitFor();
    await screenshot(page, 'admin-users');

    await identities.getByRole('button', { name: 'Unlink corp' }).click();
    await page.getByText('Unlinked corp from ann.lee@example.com.').waitFor();
    await identities.getByText('None: they sign in with the box alone.').waitFor();
    expect(await rest('GET', `/users/${id}/identities`)).to.deep.equal([]);
    // The directory still sees the person as it wrote them.
    expect((await rest('GET', `/users/${id}`)).scim).to.include({ externalId: 'entra-0001' });
  });

  it("adds a member to a group by email and removes one; the people's records say so", async function () {
    const ops = await rest('POST', '/groups', { name: 'ops', description: 'The people on call' });
    const [fay, gus] = [await person('fay@example.com'), await person('gus@example.com')];
    await rest('PUT', `/users/${gus.id}`, { 'group-ids': [ops.id] });
    await page.reload();
    await page.getByRole('tab', { name: 'Groups' }).click();
    await page.getByRole('list', { name: 'Groups' }).getByRole('button', { name: 'ops' }).click();
    const members = page.getByRole('list', { name: 'Members' });
    await members.getByText('gus@example.com', { exact: true }).waitFor();

    await page.getByLabel('Add a member').fill('FAY@example.com');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    await page.getByText('Added fay@example.com to ops.').waitFor();
    await members.getByText('fay@example.com', { exact: true }).waitFor();
    expect((await rest('GET', `/users/${fay.id}`))['group-ids']).to.deep.equal([ops.id]);
    await screenshot(page, 'admin-groups');

    await page.getByLabel('Add a member').fill('nobody@example.com');
    await page.getByLabel('Add a member').press('Enter');
    await page.locator('#group-members-error').getByText('Nobody has the email nobody@example.com.').waitFor();
    expect(await rest('GET', '/groups?name=ops')).to.have.length(1); // Enter added, it did not save the group

    await members.getByRole('button', { name: 'Remove gus@example.com from ops' }).click();
    await page.getByText('Removed gus@example.com from ops.').waitFor();
    expect((await rest('GET', `/users/${gus.id}`))['group-ids']).to.deep.equal([]);
    expect(await members.locator('li').allTextContents()).to.deep.equal(['fay@example.com' + 'Remove']);

    // The Users tab follows: saving fay's form keeps the group added here.
    await page.getByRole('tab', { name: 'Users' }).click();
    await page.getByRole('list', { name: 'Users' }).getByRole('button', { name: 'fay@example.com' }).click();
    expect(await page.getByRole('group', { name: 'Groups' }).getByLabel('ops').isChecked()).to.equal(true);
  });

  it("the Sessions tab lists the box's signed-in browsers beside the grants; End signs one out, and its grant ends", async function () {
    const hal = await person('hal@example.com');
    const [first, second] = [await browserOf(hal.email), await browserOf(hal.email)];
    await browserOf((await person('ivy@example.com')).email);
    // A grant to the wiki through each of hal's browsers.
    const wiki = await codeClient(box, root, 'https://wiki.example/cb', 'wiki');
    for (const agent of [first, second]) {
      const code = new URL((await agent.get(wiki.authorizePath())).headers.get('location')!).searchParams.get('code')!;
      await wiki.claimsOf(code);
    }
    await page.reload();
    await page.getByRole('tab', { name: 'Sessions' }).click();
    const browsers = page.getByRole('table', { name: /Signed-in browsers/ });
    await browsers.getByRole('cell', { name: 'ivy@example.com', exact: true }).waitFor();
    expect(await page.getByRole('table', { name: /live grants/ }).isVisible()).to.equal(true);
    await page.locator('#panel-sessions').getByRole('searchbox', { name: 'Filter' }).fill('HAL@');
    await page.getByText('2 signed-in browsers.').waitFor();
    await page.getByText('2 live grants.').waitFor();
    expect(await browsers.getByRole('cell', { name: 'ivy@example.com', exact: true }).count()).to.equal(0);
    await screenshot(page, 'admin-sessions');

    await browsers
      .getByRole('button', { name: /^End the browser session of hal@example\.com since / })
      .first()
      .click();
    await page.getByText('Signed out a browser of hal@example.com.').waitFor();
    await page.getByText('1 signed-in browser.').waitFor();
    await page.getByText('1 live grant.').waitFor(); // the grant through that browser ended with it
    expect([await signedIn(first), await signedIn(second)].sort()).to.deep.equal([false, true]);
    expect((await rest('GET', `/users/${hal.id}/sessions`)).browsers).to.have.length(1);
    await page.locator('#panel-sessions').getByRole('searchbox', { name: 'Filter' }).fill('');
  });

  describe('attacks', function () {
    it('a name holding U+202E is shown isolated: the words around it read as written, and a confirmation marks it off', async function () {
      // A right-to-left override the box refuses now, in an address kept from before it did (or written by SQL):
      // unisolated, it drew the rest of each sentence holding the name right to left (issue 63, item 7).
      const email = 'eve\u202E@example.com';
      const db = new pg.Client({ connectionString: box.databaseUrl });
      await db.connect();
      let id: number;
      try {
        const hash = await argon2.hash(PASSWORD, { type: argon2.argon2id });
        id = (await db.query('INSERT INTO users (email, password_hash, active) VALUES ($1, $2, false) RETURNING id', [email, hash])).rows[0]
          .id;
      } finally {
        await db.end();
      }
      const ops = (await rest('GET', '/groups?name=ops'))[0];
      await rest('PUT', `/users/${id}`, { 'group-ids': [ops.id] });

      await page.reload();
      await page.getByRole('tab', { name: 'Groups' }).click();
      await page.getByRole('list', { name: 'Groups' }).getByRole('button', { name: 'ops' }).click();
      const item = page.getByRole('list', { name: 'Members' }).getByRole('listitem').filter({ hasText: '(turned off)' });
      // The members load after the group is picked; allTextContents() reads what is there now, without waiting.
      await item.waitFor();
      expect(await item.locator('bdi').allTextContents()).to.deep.equal([email]);
      expect(await drawnInOrder(item, ' (turned off)'), 'the words after the name').to.equal(true);

      await item.getByRole('button', { name: /^Remove eve/ }).click();
      const status = page.locator('#app-status');
      await status.getByText(/^Removed eve.*from ops\.$/).waitFor();
      expect(await status.locator('bdi').allTextContents()).to.deep.equal([email, 'ops']);
      expect(await drawnInOrder(status, ' from '), 'the words between the names').to.equal(true);
      expect((await rest('GET', `/users/${id}`))['group-ids']).to.deep.equal([]);

      await page.getByRole('tab', { name: 'Users' }).click();
      await page.getByRole('list', { name: 'Users' }).getByRole('button').filter({ hasText: email }).click();
      await page.locator('#user-form-title bdi', { hasText: email }).waitFor();
      expect(await page.locator('#user-form-title bdi').allTextContents()).to.deep.equal([email]);
      // A confirm() dialog holds no markup: the name sits between U+2068 FIRST STRONG ISOLATE and U+2069 POP DIRECTIONAL ISOLATE.
      const asked = new Promise<string>((resolve) =>
        page.once('dialog', (dialog) => {
          resolve(dialog.message());
          void dialog.dismiss();
        }),
      );
      await page.getByRole('button', { name: 'Reset second factors' }).click();
      expect(await asked).to.match(new RegExp(`^Reset the second factors of \u2068${email}\u2069\\? `));
    });

    it('a person whose email, data, directory name and identity hold markup or terminal escapes is shown as inert text', async function () {
      // An address the box refuses now, as a row from before it did (or written by SQL): the console trusts no server string.
      const email = `${MARKUP}\u001b]0;pwned\u0007@example.com`;
      const db = new pg.Client({ connectionString: box.databaseUrl });
      await db.connect();
      let id: number;
      try {
        const hash = await argon2.hash(PASSWORD, { type: argon2.argon2id });
        id = (
          await db.query('INSERT INTO users (email, password_hash, external_id) VALUES ($1, $2, $3) RETURNING id', [email, hash, MARKUP])
        ).rows[0].id;
        await db.query('UPDATE users SET scim = $2 WHERE id = $1', [id, { name: { formatted: `${MARKUP}\u001b[2J` }, title: MARKUP }]);
      } finally {
        await db.end();
      }
      await rest('PUT', `/users/${id}`, { data: JSON.stringify({ note: MARKUP }) });
      await linkDummyIdentity(box.databaseUrl!, id, 'corp', `${MARKUP}\u001b[2J`);
      const ops = (await rest('GET', '/groups?name=ops'))[0];
      await rest('PUT', `/users/${id}`, { 'group-ids': [ops.id] });
      let alerted = false;
      page.on('dialog', (dialog) => {
        alerted = true;
        void dialog.dismiss();
      });

      await page.reload();
      await page.getByRole('tab', { name: 'Users' }).click();
      const listed = page.getByRole('list', { name: 'Users' }).getByRole('button', { name: /^<img src=x/ });
      expect(await listed.textContent()).to.equal(email);
      await listed.click();
      await page.locator('#user-scim-list').getByText(`${MARKUP}\u001b[2J`, { exact: true }).waitFor();
      await page
        .getByRole('list', { name: 'Linked identities' })
        .getByText(/^corp · <img src=x/)
        .waitFor();
      expect(await page.getByLabel('Data').inputValue()).to.equal(JSON.stringify({ note: MARKUP }));
      expect(await page.locator('#user-form-title').textContent()).to.equal(`Edit ${email}`);

      await page.getByRole('tab', { name: 'Groups' }).click();
      await page.getByRole('list', { name: 'Groups' }).getByRole('button', { name: 'ops' }).click();
      await page.getByRole('list', { name: 'Members' }).getByText(email, { exact: true }).waitFor();

      await page.waitForTimeout(200); // an image that failed to load would have fired its handler by now
      expect(await page.evaluate(() => document.querySelectorAll('#app img').length)).to.equal(0);
      expect(await page.evaluate(() => (window as unknown as { pwned?: boolean }).pwned)).to.equal(undefined);
      expect(alerted).to.equal(false);
    });

    it('an admin whose policies allow only reading people is told, in each place, what they may not see or change; the rest works', async function () {
      const readers = await rest('POST', '/groups', { name: 'readers' });
      await rest('PUT', '/AccessPolicy/readers-read-people', {
        engine: 'matcho',
        link: [{ id: 'readers', resourceType: 'Group' }],
        matcho: { 'request-method': 'get', uri: '#^/(users|groups)(/\\d+)?$' },
      });
      const reader = await person('reader@example.com');
      await rest('PUT', `/users/${reader.id}`, { 'group-ids': [readers.id] });
      const theirs = await browser.newPage({ viewport: { width: 1200, height: 900 } });
      try {
        await signInAs(theirs, 'reader@example.com', PASSWORD);
        await selectPerson('dee@example.com', theirs);
        await theirs.getByText("Your account may not see this person's linked identities.").waitFor();

        await theirs.getByRole('tab', { name: 'Groups' }).click();
        await theirs.getByRole('list', { name: 'Groups' }).getByRole('button', { name: 'ops' }).click();
        await theirs.getByRole('list', { name: 'Members' }).getByText('fay@example.com', { exact: true }).waitFor();
        await theirs.getByRole('button', { name: 'Remove fay@example.com from ops' }).click();
        await theirs.getByText('Your account may not see or change the people of this box.').waitFor();
        expect((await rest('GET', '/users?email=fay@example.com'))[0]['group-ids']).to.have.length(1);

        await theirs.getByRole('tab', { name: 'Sessions' }).click();
        await theirs.getByText("Your account may not see the box's signed-in browsers.").waitFor();
        // The other tabs still work.
        await theirs.getByRole('tab', { name: 'Users' }).click();
        await theirs.getByRole('list', { name: 'Users' }).getByRole('button', { name: 'fay@example.com' }).click();
        await theirs.getByRole('heading', { name: 'Edit fay@example.com' }).waitFor();
      } finally {
        await theirs.close();
      }
    });
  });
});
