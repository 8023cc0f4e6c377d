// Single Logout through the browser with SAML apps none of us wrote the SAML of: two pysaml2 service
// providers (test/py-saml-sp/sp.py --single-logout) whose metadata has only an HTTP-Redirect
// SingleLogoutService, each keeping a session of its own (a cookie its ACS sets). Ann signs in to
// both through the box in Chromium, then signs out at the box: Chromium is sent to each app's /slo
// with the box's signed LogoutRequest, pysaml2 checks it against the box's IdP metadata, ends its
// session and sends its signed LogoutResponse back to the box's /auth/saml/slo, and at the end
// Chromium is back at the box. Both apps' own sessions are gone afterwards, as the apps say.
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { Box } from '../support/box.js';
import { launchBrowser, screenshot } from '../support/browser.js';
import { startPySamlSp, type PySamlSp } from '../support/py-saml-sp.js';
import { declareSamlApp } from '../support/saml-apps.js';
import { startAll } from '../support/start-all.js';

describe('SAML apps made with pysaml2 are signed out through the browser (HTTP-Redirect)', function () {
  this.timeout(180_000);
  let box: Box;
  let browser: Browser;
  let wiki: PySamlSp;
  let notes: PySamlSp;
  const ann = { email: 'ann@example.com', password: 'ann-password-1' };

  async function declare(id: string, sp: PySamlSp): Promise<void> {
    const metadata = await (await fetch(sp.metadataUrl)).text();
    expect(metadata).to.include('SingleLogoutService');
    await declareSamlApp(box, await box.rootToken(), id, { metadata: { xml: metadata } });
  }

  before(async function () {
    // The box on another site (localhost) than its apps (127.0.0.1), as in production.
    [box, browser] = await startAll([Box.start({ hostname: 'localhost' }), launchBrowser()]);
    const issuerMetadata = `${box.url}/auth/saml/metadata`;
    [wiki, notes] = await Promise.all([
      startPySamlSp(issuerMetadata, 'wiki', { singleLogout: true }),
      startPySamlSp(issuerMetadata, 'notes', { singleLogout: true }),
    ]);
    await declare('wiki', wiki);
    await declare('notes', notes);
    expect((await box.json('POST', '/users', ann, await box.rootToken())).status).to.equal(201);
  });

  after(async function () {
    await browser?.close();
    await Promise.all([wiki?.stop(), notes?.stop(), box?.stop()]);
  });

  /** What the app says of this browser's session there. */
  async function sessionAt(page: Page, sp: PySamlSp): Promise<string> {
    await page.goto(`${sp.url}/session`);
    return (await page.getByRole('heading').first().textContent()) ?? '';
  }

  it("a sign-out at the box ends both apps' own sessions: each gets the box's LogoutRequest and answers it", async function () {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${wiki.url}/login`);
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      await page.getByLabel('Email').fill(ann.email);
      await page.getByLabel('Password').fill(ann.password);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.getByRole('heading', { name: 'Signed in to wiki' }).waitFor();
      // Signed in at the box already: notes signs her in without a page.
      await page.goto(`${notes.url}/login`);
      await page.getByRole('heading', { name: 'Signed in to notes' }).waitFor();
      expect(await sessionAt(page, wiki)).to.equal('Signed in to wiki');
      expect(await sessionAt(page, notes)).to.equal('Signed in to notes');

      await page.goto(`${box.url}/auth/sign-out`);
      await page.getByRole('button', { name: 'Sign out' }).click();
      // Through both apps' /slo and back: the box's page says she is signed out.
      await page.getByRole('heading', { name: 'Signed out' }).waitFor();
      expect(new URL(page.url()).origin).to.equal(box.url);
      await screenshot(page, 'saml-python-sp-logout');
      expect(await sessionAt(page, wiki), `wiki's log:\n${wiki.log().slice(-3000)}`).to.equal('Not signed in to wiki');
      expect(await sessionAt(page, notes), `notes' log:\n${notes.log().slice(-3000)}`).to.equal('Not signed in to notes');
      // The apps' answers were taken as signed-out: nothing partial logged.
      expect(box.logs.filter((l) => l.includes('saml_logout_app_failed'))).to.deep.equal([]);
      expect(box.logs.filter((l) => l.includes('"event":"saml_logout_started"'))).to.have.length(1);
    } finally {
      await context.close();
    }
  });
});
