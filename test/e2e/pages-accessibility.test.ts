// Every people-facing page, branded, in English and in German, in a real Chromium, checked with
// axe-core (@axe-core/playwright) against the WCAG 2 A and AA rules: a violation fails the test.
// The pages are reached as a person reaches them (a sign-in, a mailed reset link, an authenticator
// app set up, a device's code), and the branded sign-in page is the docs' screenshot in both
// languages (docs/guides/branding-and-languages.md).
import { AxeBuilder } from '@axe-core/playwright';
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { Box } from '../support/box.js';
import { launchBrowser, screenshot, withoutPasskeyAutofill } from '../support/browser.js';
import { TestSmtp } from '../support/smtp.js';
import { base32Decode, stepAt, totpCode } from '../support/totp.js';

const DEVICE = 'urn:ietf:params:oauth:grant-type:device_code';
/** A small logo, inlined: the pages then load no image from elsewhere (img-src 'self' data:). */
const LOGO = `data:image/svg+xml;base64,${Buffer.from(
  '<svg xmlns="http://www.w3.org/2000/svg" width="32" height="32"><rect width="32" height="32" rx="6" fill="#8a1c1c"/><path d="M9 23 16 8l7 15" stroke="#fff" stroke-width="3" fill="none"/></svg>',
).toString('base64')}`;
export const BRANDING = {
  BOXAUTH_BRAND_NAME: 'ACME Corp',
  BOXAUTH_BRAND_LOGO_URL: LOGO,
  BOXAUTH_BRAND_PRIMARY_COLOR: '#8a1c1c',
  BOXAUTH_BRAND_BACKGROUND_COLOR: '#f4efe6',
  BOXAUTH_BRAND_SUPPORT_URL: 'https://help.acme.example/sign-in',
};

interface Violation {
  id: string;
  help: string;
  nodes: string[];
}

/** What axe finds wrong on the page as it is now, under WCAG 2 A and AA. */
async function violations(page: Page): Promise<Violation[]> {
  const result = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze();
  return result.violations.map((v) => ({ id: v.id, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ')) }));
}

describe('the people’s pages, branded, in English and German: no WCAG 2 A/AA violation (axe, Chromium)', function () {
  this.timeout(240_000);
  let box: Box;
  let smtp: TestSmtp;
  let browser: Browser;
  let root: string;
  /** Every page checked, by language: what the test went through. */
  const checked: Record<string, string[]> = { en: [], de: [] };

  before(async function () {
    smtp = await TestSmtp.start();
    [box, browser] = await Promise.all([
      Box.start({
        hostname: 'localhost',
        env: {
          ...smtp.boxEnv(),
          ...BRANDING,
          BOXAUTH_REGISTRATION: 'true',
          BOXAUTH_SMTP_SIGN_IN_CODES: 'second-factor',
        },
      }),
      launchBrowser(),
    ]);
    root = await box.rootToken();
    const wiki = await box.json(
      'PUT',
      '/Client/wiki',
      {
        grant_types: ['authorization_code'],
        description: 'The team wiki',
        auth: { authorization_code: { redirect_uri: 'http://localhost:1/cb' } },
      },
      root,
    );
    expect(wiki.status, wiki.text).to.equal(201);
    const tv = await box.json('PUT', '/Client/tv', { grant_types: [DEVICE], scope: ['openid'], description: 'The TV' }, root);
    expect(tv.status, tv.text).to.equal(201);
  });
  after(async function () {
    await browser?.close();
    await box?.stop();
    await smtp?.stop();
  });

  it('the check itself: axe finds what a page lacks (an image without alt, a field without label, grey on white)', async function () {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.setContent(
      '<!doctype html><html><head><title>t</title></head><body><main><img src="data:,"><input id="x"><p style="color:#bbb">faint</p></main></body></html>',
    );
    expect((await violations(page)).map((v) => v.id)).to.include.members(['image-alt', 'label', 'color-contrast', 'html-has-lang']);
    await context.close();
  });

  for (const lang of ['en', 'de'] as const) {
    describe(`in ${lang === 'en' ? 'English' : 'German'}`, function () {
      let context: BrowserContext;
      let page: Page;
      const email = `ann-${lang}@example.com`;
      const password = `ann-${lang}-password-1`;
      let appKey: Buffer = Buffer.alloc(0);

      before(async function () {
        const made = await box.json('POST', '/users', { email, password, email_verified: true }, root);
        expect(made.status, made.text).to.equal(201);
        context = await browser.newContext({
          locale: lang === 'en' ? 'en-US' : 'de-DE',
          extraHTTPHeaders: { 'Accept-Language': lang === 'en' ? 'en-US,en;q=0.9' : 'de-DE,de;q=0.9,en;q=0.5' },
        });
        await withoutPasskeyAutofill(context);
        page = await context.newPage();
      });
      after(async function () {
        await context?.close();
      });

      /** The page now: in the language asked for, branded, with no violation. */
      async function check(name: string): Promise<void> {
        await page.waitForLoadState('load');
        expect(await page.getAttribute('html', 'lang'), name).to.equal(lang);
        expect(await page.getAttribute('html', 'dir'), name).to.equal('ltr');
        expect(await page.locator('.brand span').first().textContent(), name).to.equal('ACME Corp');
        expect(await violations(page), `${name} (${lang})`).to.deep.equal([]);
        checked[lang]!.push(name);
      }
      async function visit(path: string, name: string): Promise<void> {
        await page.goto(`${box.url}${path}`);
        await check(name);
      }
      async function signIn(returnTo = '/auth/account'): Promise<void> {
        await page.goto(`${box.url}/auth/sign-in?return_to=${encodeURIComponent(returnTo)}`);
        await page.locator('#email').fill(email);
        await page.locator('#password').fill(password);
        await page.locator('form[action="/auth/sign-in"] button[type=submit]').click();
      }

      it('the pages before a sign-in: home, sign-in, sign-up, reset, device, logout, and the error pages', async function () {
        await visit('/', 'home');
        await visit('/auth/sign-in', 'sign-in');
        // The docs' screenshots (docs/guides/branding-and-languages.md).
        if (lang === 'en') await screenshot(page, 'sign-in-branded');
        else await screenshot(page, 'sign-in-de');
        expect(await page.locator('h1').textContent()).to.equal(lang === 'en' ? 'Sign in' : 'Anmelden');
        await page.locator('form[action="/auth/sign-in"] button[type=submit]').waitFor();
        await page.locator('#email').fill(email);
        await page.locator('#password').fill('not-the-password');
        await page.locator('form[action="/auth/sign-in"] button[type=submit]').click();
        await check('sign-in, refused');
        // What the route says is in the page's language too.
        expect(await page.locator('p.error[role=alert]:not(#passkey-error)').textContent()).to.match(
          lang === 'en' ? /^The email or the password is wrong\./ : /^Die E-Mail-Adresse oder das Passwort ist falsch\./,
        );
        await visit('/auth/sign-up', 'sign-up');
        await visit('/auth/reset', 'reset request');
        await page.locator('#email').fill(email);
        await page.locator('form[action="/auth/reset"] button[type=submit]').click();
        await check('reset sent');
        await visit('/auth/reset/confirm?token=not-a-token', 'link invalid');
        await visit('/auth/device/verify', 'device code');
        await visit('/auth/device/verify?user_code=WRONG-CODE', 'device code, wrong');
        await visit('/auth/logout', 'logout');
        await visit('/auth/sign-in/second-factor', 'sign in again (no step)');
        await visit('/auth/upstream/nobody', 'no such sign-in');
        await visit('/no/such/page', 'not found');
        await visit('/auth/signed-in', 'signed out');
      });

      it('a mailed reset link: the new password page', async function () {
        const mail = await smtp.waitForMail(() => smtp.mailsTo(email).length >= 1);
        const link = /https?:\/\/\S+\/auth\/reset\/confirm\?token=[A-Za-z0-9_-]+/.exec(mail.parsed.text ?? '')![0];
        // The mail is the company's: its name as the sender and in the subject, signed with the support link.
        expect(mail.parsed.from?.value[0]).to.deep.include({ name: 'ACME Corp', address: 'no-reply@box.test' });
        expect(mail.parsed.subject).to.equal('Reset your password on ACME Corp');
        expect(mail.parsed.text).to.match(/\n-- \nACME Corp\nhttps:\/\/help\.acme\.example\/sign-in\n$/);
        expect(mail.parsed.html).to.include('<a href="https://help.acme.example/sign-in">');
        await page.goto(link);
        await check('new password');
      });

      it('signed in: account, passkeys, confirm, consent, device consent; codes by email asked for; an authenticator app and its recovery codes', async function () {
        await signIn();
        await page.waitForURL(/\/auth\/account/);
        await check('account');
        await visit('/auth/account/passkeys', 'passkeys');
        await visit('/auth/account/confirm?return_to=%2Fauth%2Faccount', 'confirm it is you');
        await visit('/auth/signed-in', 'signed in');
        const authorize = new URLSearchParams({
          response_type: 'code',
          client_id: 'wiki',
          redirect_uri: 'http://localhost:1/cb',
          scope: 'openid email profile',
          state: 's',
          code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
          code_challenge_method: 'S256',
        });
        await visit(`/auth/authorize?${authorize.toString()}`, 'consent');
        const asked = await box.form('/auth/device', { client_id: 'tv', scope: 'openid' });
        expect(asked.status, asked.text).to.equal(200);
        await visit(`/auth/device/verify?user_code=${encodeURIComponent(asked.body.user_code as string)}`, 'device consent');
        // Codes by email asked for, and left unconfirmed: the page that takes the mailed code.
        await page.goto(`${box.url}/auth/account`);
        await page.locator('form[action="/auth/account/email-codes"] button').click();
        await page.locator('form[action="/auth/account/email-codes"] input[name=email_code]').waitFor();
        await check('codes by email enrolment');
        await page.goto(`${box.url}/auth/account`);
        await page.locator('form[action="/auth/account/totp"] button').click();
        await check('authenticator app enrolment');
        appKey = base32Decode(((await page.locator('#totp-secret').textContent()) ?? '').replace(/\s+/g, ''));
        await page.locator('#code').fill(totpCode(appKey, stepAt(Date.now())));
        await page.locator('#code').press('Enter');
        await page.locator('#recovery-codes').waitFor();
        await check('recovery codes');
      });

      it('signed in again: the second-factor step, then sign-out', async function () {
        await context.clearCookies();
        await signIn();
        await page.locator('#code').waitFor();
        await check('second factor');
        await page.locator('#code').fill(totpCode(appKey, stepAt(Date.now()) + 1));
        await page.locator('#code').press('Enter');
        await page.waitForURL(/\/auth\/account/);
        await visit('/auth/sign-out', 'sign out');
        await visit('/auth/logout', 'logout, signed in');
      });
    });
  }

  after(function () {
    // Both languages went through the same pages.
    expect(checked.de).to.deep.equal(checked.en);
  });
});
