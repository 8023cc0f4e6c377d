// One person's way back in, in a real Chromium, with every mail received by a real SMTP server
// (test/support/smtp.ts, STARTTLS) and every link in it followed by the browser
// (docs/guides/password-reset.md, docs/guides/account-page.md): Cara signs up and opens her
// account with the mailed link; on her account page she changes her address and confirms the new
// one; she forgets her password and sets a new one from the reset mail; and from her laptop's
// account page she signs out the phone she left signed in, and the wiki she used on it with it. The screenshots of the guides come
// from here (test-artifacts/way-back-*.png).
import { expect } from 'chai';
import { createHash, randomBytes } from 'node:crypto';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { Box, basic } from '../support/box.js';
import { launchBrowser, screenshot } from '../support/browser.js';
import { TestSmtp, type ReceivedMail } from '../support/smtp.js';

const WIKI_CALLBACK = 'http://127.0.0.1:9/callback';
const WIKI_SECRET = 'wiki-secret-123';
const CARA = { email: 'cara@example.com', newEmail: 'cara@newjob.example', password: 'cara-password-1', newPassword: 'cara-password-2' };

describe('a way back in, one person in Chromium, mail from a real SMTP server', function () {
  this.timeout(90_000);
  let smtp: TestSmtp;
  let box: Box;
  let browser: Browser;
  let laptop: BrowserContext;
  let page: Page;

  before(async function () {
    smtp = await TestSmtp.start();
    [box, browser] = await Promise.all([
      Box.start({ hostname: 'localhost', env: { ...smtp.boxEnv(), BOXAUTH_REGISTRATION: 'true' } }),
      launchBrowser(),
    ]);
    await box.addClient(
      'wiki',
      {
        grant_types: ['authorization_code'],
        secret: WIKI_SECRET,
        first_party: true,
        auth: { authorization_code: { redirect_uri: WIKI_CALLBACK, refresh_token: true } },
      },
      { policy: false },
    );
    laptop = await browser.newContext();
    page = await laptop.newPage();
  });
  after(async function () {
    await Promise.all([browser?.close(), box?.stop()]);
    await smtp?.stop();
  });

  /**
   * Cara signs in to the wiki from `p` (already signed in to the box: no page to fill); the wiki's
   * server exchanges the code its callback got. Its refresh token.
   */
  async function appSignIn(p: Page): Promise<string> {
    const callback = p.waitForRequest((r) => r.url().startsWith(WIKI_CALLBACK));
    const verifier = randomBytes(32).toString('base64url');
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: 'wiki',
      redirect_uri: WIKI_CALLBACK,
      scope: 'openid email',
      state: 's',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    });
    await p.goto(`${box.url}/auth/authorize?${query}`).catch(() => undefined); // the callback's server is not there
    const code = new URL((await callback).url()).searchParams.get('code')!;
    const tokens = await box.form(
      '/auth/token',
      { grant_type: 'authorization_code', code, redirect_uri: WIKI_CALLBACK, code_verifier: verifier },
      { Authorization: basic('wiki', WIKI_SECRET) },
    );
    expect(tokens.status, tokens.text).to.equal(200);
    return tokens.body.refresh_token as string;
  }

  /** The link in the newest mail to `to` whose text holds `path`, as the mail shows it (the box's own URL). */
  async function linkFromMail(to: string, path: string, count: number): Promise<string> {
    const mail: ReceivedMail = await smtp.waitForMail(
      () => smtp.mailsTo(to).filter((m) => (m.parsed.text ?? '').includes(path)).length >= count,
    );
    const mails = smtp.mailsTo(to).filter((m) => (m.parsed.text ?? '').includes(path));
    const text = mails[mails.length - 1]!.parsed.text ?? mail.parsed.text ?? '';
    const link = new RegExp(`https?://\\S+${path.replace(/\//g, '\\/')}\\?token=[A-Za-z0-9_-]+`).exec(text);
    expect(link, text).to.not.equal(null);
    // The HTML part carries the same link.
    expect(mails[mails.length - 1]!.parsed.html).to.include(link![0].replace(/&/g, '&amp;'));
    return link![0];
  }

  async function signIn(p: Page, email: string, password: string): Promise<void> {
    await p.goto(`${box.url}/auth/sign-in?return_to=${encodeURIComponent('/auth/account')}`);
    await p.getByLabel('Email').fill(email);
    await p.getByLabel('Password').fill(password);
    await p.getByRole('button', { name: 'Sign in', exact: true }).click();
  }

  it('Cara signs up, and her account opens with the link mailed to her', async function () {
    await page.goto(`${box.url}/auth/sign-up`);
    await page.getByLabel('Email').fill(CARA.email);
    await page.getByLabel('Password').fill(CARA.password);
    await page.getByRole('button', { name: 'Sign up' }).click();
    await page.getByRole('heading', { name: 'Check your mail' }).waitFor();
    await page.goto(await linkFromMail(CARA.email, '/auth/verify-email', 1));
    await page.getByLabel('Password').fill(CARA.password);
    await screenshot(page, 'way-back-verify');
    await page.getByRole('button', { name: 'Confirm my address' }).click();
    await page.getByRole('heading', { name: 'Address confirmed' }).waitFor();
    await signIn(page, CARA.email, CARA.password);
    await page.getByRole('heading', { name: 'Your account' }).waitFor();
    expect(await page.locator('#email-state').textContent()).to.equal('(confirmed)');
  });

  it('she changes her address on her account page: it is hers when she follows the link mailed to it', async function () {
    await page.getByText('Change your email').click();
    await page.getByLabel('New email').fill(CARA.newEmail);
    await page.locator('#email_password').fill(CARA.password);
    await page.getByRole('button', { name: 'Change email' }).click();
    await page.getByText('A link went to the new address').waitFor();
    // Hers once she follows the link mailed to it, with her password.
    expect(await page.locator('#account-email').textContent()).to.equal(CARA.email);
    await page.goto(await linkFromMail(CARA.newEmail, '/auth/confirm-email', 1));
    await page.getByLabel('Password').fill(CARA.password);
    await page.getByRole('button', { name: 'Confirm my address' }).click();
    await page.getByRole('heading', { name: 'Address confirmed' }).waitFor();
    await page.goto(`${box.url}/account`);
    expect(await page.locator('#account-email').textContent()).to.equal(CARA.newEmail);
    expect(await page.locator('#email-state').textContent()).to.equal('(confirmed)');
  });

  it('she forgets her password and sets a new one from the reset mail', async function () {
    await laptop.clearCookies();
    await page.goto(`${box.url}/auth/sign-in`);
    await page.getByRole('link', { name: 'Forgot your password?' }).click();
    await page.getByLabel('Email').fill(CARA.newEmail);
    await screenshot(page, 'way-back-reset');
    await page.getByRole('button', { name: 'Send me a link' }).click();
    await page.getByRole('heading', { name: 'Check your mail' }).waitFor();
    await page.goto(await linkFromMail(CARA.newEmail, '/auth/reset/confirm', 1));
    await page.getByLabel('New password').fill(CARA.newPassword);
    await screenshot(page, 'way-back-new-password');
    await page.getByRole('button', { name: 'Set password' }).click();
    await page.getByRole('heading', { name: 'Your password is changed' }).waitFor();
    await signIn(page, CARA.newEmail, CARA.password);
    await page.getByText('The email or the password is wrong.').waitFor();
    await signIn(page, CARA.newEmail, CARA.newPassword);
    await page.getByRole('heading', { name: 'Your account' }).waitFor();
  });

  it('from her laptop she signs out the phone she left signed in', async function () {
    const phone = await browser.newContext({ userAgent: 'Cara-Phone/1.0 (Mobile)' });
    const phonePage = await phone.newPage();
    try {
      await signIn(phonePage, CARA.newEmail, CARA.newPassword);
      await phonePage.getByRole('heading', { name: 'Your account' }).waitFor();
      // On the phone she uses the team's wiki, which holds a refresh token of hers from then on.
      const refreshToken = await appSignIn(phonePage);

      await page.reload();
      const phoneRow = page.locator('#sign-ins tr', { hasText: 'Cara-Phone/1.0' });
      await phoneRow.waitFor();
      await page.locator('#grants tr', { hasText: 'wiki' }).waitFor();
      await screenshot(page, 'way-back-account');
      await phoneRow.getByRole('button', { name: 'Sign out' }).click();
      await page.getByText('Signed out there.').waitFor();
      expect(await page.locator('#sign-ins tr', { hasText: 'Cara-Phone/1.0' }).count()).to.equal(0);

      await phonePage.goto(`${box.url}/auth/signed-in`);
      await phonePage.getByText('You are signed out.').waitFor();
      await page.goto(`${box.url}/auth/signed-in`);
      await page.getByText(`You are signed in as ${CARA.newEmail}`).waitFor();
      // What the wiki got through the phone ended with it.
      const refreshed = await box.form(
        '/auth/token',
        { grant_type: 'refresh_token', refresh_token: refreshToken },
        { Authorization: basic('wiki', WIKI_SECRET) },
      );
      expect(refreshed.status).to.equal(400);
    } finally {
      await phone.close();
    }
  });
});
