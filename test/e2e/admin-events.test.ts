// The admin console's Events tab in Chromium (issue 51): a person turned off in the console, and
// the event that says who did it found with the tab's filters, the person's record a click away;
// an event about a record whose fields hold markup shown as inert text; and an administrator of
// one App seeing that App's events and nothing of the rest of the box, whatever they filter by.
// The screenshot docs/screenshots/admin-events.png comes from here (test-artifacts/).
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { Box } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';
import { launchBrowser, screenshot } from '../support/browser.js';

const PASSWORD = 'events-password-1';
const MARKUP = '<img src=x onerror=window.pwned=true>';

describe('admin console: the Events tab (Chromium)', function () {
  this.timeout(120_000);
  let box: Box;
  let browser: Browser;
  let page: Page;
  let root: string;
  let adminId: number;

  before(async function () {
    [box, browser] = await Promise.all([
      Box.start({ env: { BOXAUTH_ADMIN_EMAIL: 'admin@example.com', BOXAUTH_ADMIN_PASSWORD: 'admin-password' } }),
      launchBrowser(),
    ]);
    root = await box.rootToken();
    adminId = (await rest('GET', '/users?email=admin@example.com'))[0].id;
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
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
  async function signInAs(on: Page, email: string, password: string): Promise<void> {
    await on.goto(`${box.url}/admin`);
    await on.getByLabel('Email').fill(email);
    await on.getByLabel('Password').fill(password);
    await on.getByRole('button', { name: 'Sign in', exact: true }).click();
    await on.getByRole('tab', { name: 'Users' }).waitFor();
  }
  const panel = (on: Page) => on.locator('#panel-events');
  const rows = (on: Page) => panel(on).getByRole('table', { name: 'Events' }).locator('tbody tr');

  it('finds the event that says who turned a person off, and shows the person', async function () {
    const eve = await rest('POST', '/users', { email: 'eve@example.com', password: PASSWORD });
    await new FormAgent(box).signIn('eve@example.com', PASSWORD);
    await page.reload();
    await page.getByRole('tab', { name: 'Users' }).click();
    await page.getByRole('list', { name: 'Users' }).getByRole('button', { name: 'eve@example.com' }).click();
    await page.getByRole('checkbox', { name: 'Active', exact: true }).uncheck();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved eve@example.com.').waitFor();

    await page.getByRole('tab', { name: 'Events' }).click();
    await panel(page).getByLabel('Event', { exact: true }).selectOption('account');
    await panel(page).getByLabel('Person').fill(String(eve.id));
    const turnedOff = rows(page).filter({ hasText: 'deactivated' });
    await turnedOff.waitFor();
    expect(await turnedOff.locator('td').nth(4).textContent()).to.equal(`user ${adminId} via client boxauth-admin`);
    await turnedOff.getByRole('button', { name: `User ${eve.id}` }).click();
    await page.locator('#event-record-body').getByText('"email": "eve@example.com"').waitFor();
    expect(await page.locator('#event-record-body').textContent()).to.contain('"active": false');

    // The record's own change says what changed, before → after.
    await panel(page).getByLabel('Event', { exact: true }).selectOption('record_changed');
    await rows(page).filter({ hasText: 'User changed: active' }).waitFor();
    await panel(page).getByLabel('Event', { exact: true }).selectOption('');
    await panel(page).getByLabel('Person').fill('');
    await rows(page).filter({ hasText: 'Sign-in' }).first().waitFor();
    await screenshot(page, 'admin-events');
  });

  it('narrows by outcome and time, and pages back through older events', async function () {
    await rest('POST', '/users', { email: 'fay@example.com', password: PASSWORD });
    for (let i = 0; i < 2; i++) await new FormAgent(box).signIn('fay@example.com', 'not-the-password');
    await page.reload();
    await page.getByRole('tab', { name: 'Events' }).click();
    await panel(page).getByLabel('Outcome').selectOption('failure');
    await rows(page).filter({ hasText: 'wrong password' }).first().waitFor();
    // The answer to the filter replaces the rows of the unfiltered trail: only failures are left.
    await page.waitForFunction(() => {
      const outcomes = Array.from(document.querySelectorAll('#events-rows td:nth-child(4)'), (td) => td.textContent);
      return outcomes.length > 0 && outcomes.every((o) => o === 'Failure');
    });
    await panel(page).getByLabel('Since').fill('2099-01-01T00:00');
    await rows(page).filter({ hasText: 'No events match.' }).waitFor();
    await panel(page).getByLabel('Since').fill('');
    await panel(page).getByLabel('Outcome').selectOption('');
    for (let i = 0; i < 60; i++) await box.json('PUT', `/AccessPolicy/many-${i}`, { engine: 'matcho', matcho: {}, link: NOBODY }, root);
    await panel(page).getByLabel('Record', { exact: true }).selectOption('AccessPolicy');
    // The filter's answer replaces the rows of the one before: a page of 50 policies' creations.
    await page.waitForFunction(() => {
      const about = Array.from(document.querySelectorAll('#events-rows td:nth-child(6)'), (td) => td.textContent ?? '');
      return about.length === 50 && about.every((a) => a.startsWith('AccessPolicy '));
    });
    await page.getByRole('button', { name: 'Older events' }).click();
    await page.waitForFunction(() => document.querySelectorAll('#events-rows tr').length > 50);
    const shown = await rows(page).locator('td:nth-child(6)').allTextContents();
    expect(new Set(shown).size).to.equal(shown.length);
  });

  it('shows a record whose fields hold markup as text', async function () {
    await rest('PUT', '/Client/marked', { grant_types: ['client_credentials'], description: MARKUP, secret: 'marked-secret-1' });
    await page.reload();
    await page.getByRole('tab', { name: 'Events' }).click();
    await panel(page).getByLabel('Client', { exact: true }).fill('marked');
    const row = rows(page).filter({ hasText: 'Client created' });
    await row.waitFor();
    await row.getByRole('button', { name: 'Client marked' }).click();
    await page.locator('#event-record-body').getByText(MARKUP, { exact: false }).waitFor();
    expect(await page.locator('#panel-events img').count()).to.equal(0);
    expect(await page.evaluate(() => (window as unknown as { pwned?: boolean }).pwned)).to.equal(undefined);
  });

  it("an administrator of one App sees that App's events, and nothing of the box's", async function () {
    await rest('PUT', '/App/wiki', { urls: ['https://wiki.example'] });
    await rest('PUT', '/App/payroll', { urls: ['https://payroll.example'] });
    const group = await rest('POST', '/groups', { name: 'wiki-admins' });
    await rest('POST', '/users', { email: 'wendy@example.com', password: PASSWORD, 'group-ids': [group.id] });
    await rest('PUT', '/AccessPolicy/wiki-admins-read', {
      engine: 'matcho',
      link: [{ id: 'wiki-admins', resourceType: 'Group' }],
      matcho: {
        'request-method': 'get',
        params: { 'resource/type': { $enum: ['AuditEvent', 'App'] }, 'resource/id': { '$one-of': ['nil?', '#^wiki$'] } },
      },
    });
    const wendy = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await wendy.goto(`${box.url}/admin`);
    await wendy.getByLabel('Email').fill('wendy@example.com');
    await wendy.getByLabel('Password').fill(PASSWORD);
    await wendy.getByRole('button', { name: 'Sign in', exact: true }).click();
    await wendy.getByRole('tab', { name: 'Events' }).click();
    await rows(wendy).filter({ hasText: 'App created' }).first().waitFor();
    const about = await rows(wendy).locator('td:nth-child(6)').allTextContents();
    expect(about.length).to.be.greaterThan(0);
    for (const text of about) expect(text.trim()).to.equal('App wiki');
    // Filters do not widen it: by another App, by a person, by the box's sign-ins.
    for (const [label, value] of [
      ['Record id', 'payroll'],
      ['Person', String(adminId)],
    ] as const) {
      await panel(wendy).getByLabel(label, { exact: true }).fill(value);
      await rows(wendy)
        .filter({ hasText: /No events match|look further back/ })
        .waitFor();
      await panel(wendy).getByLabel(label, { exact: true }).fill('');
    }
    await panel(wendy).getByLabel('Event', { exact: true }).selectOption('sign_in');
    await rows(wendy)
      .filter({ hasText: /No events match|look further back/ })
      .waitFor();
    await wendy.close();
  });
});

/** Policies written here are linked to a client nobody has: one linked to nothing would be global. */
const NOBODY = [{ id: 'nobody', resourceType: 'Client' }];
