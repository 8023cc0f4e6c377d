// An address proven by a mailed link (docs/guides/password-reset.md), received by a real SMTP
// server: at sign-up (before the first sign-in by default where the box mails; after it when
// the box is told so) and at every change of address, from the account page or by an
// administrator. Attacks: enumeration at sign-up by wording or timing (a taken address gets the
// same page as a new one, its holder a mail), a link for an old address after the address
// changed, a link followed by a mail scanner (GET changes nothing), header injection through
// the address at sign-up.
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { Box, type JsonResponse } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { TestSmtp } from '../support/smtp.js';
import { linkIn } from './password-reset.test.js';

const PASSWORD = 'a-good-password-1';
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function signUp(box: Box, email: string, browser = new FormAgent(box)): Promise<JsonResponse> {
  const page = await browser.get('/auth/sign-up');
  expect(page.status, page.text).to.equal(200);
  return browser.post('/auth/sign-up', { ...hiddenFields(page.text), email, password: PASSWORD });
}

async function confirm(box: Box, link: string, password = PASSWORD, browser = new FormAgent(box)): Promise<JsonResponse> {
  const page = await browser.get(link);
  if (page.status !== 200) return page;
  return browser.post(link.split('?')[0]!, { ...hiddenFields(page.text), password });
}

async function userOf(box: Box, email: string): Promise<Record<string, unknown>> {
  const res = await box.json('GET', `/users?email=${encodeURIComponent(email)}`, undefined, await box.rootToken());
  expect(res.status, res.text).to.equal(200);
  expect(res.body).to.have.length(1);
  return (await box.json('GET', `/users/${res.body[0].id}`, undefined, await box.rootToken())).body;
}

describe('email verification', function () {
  this.timeout(180_000);
  let smtp: TestSmtp;
  before(async function () {
    smtp = await TestSmtp.start();
  });
  after(async function () {
    await smtp?.stop();
  });
  const fresh = (what: string): string => `${what}-${randomBytes(4).toString('hex')}@example.com`;

  describe('before the first sign-in (the default where the box mails)', function () {
    let box: Box;
    before(async function () {
      box = await Box.start({
        env: {
          ...smtp.boxEnv(),
          BOXAUTH_REGISTRATION: 'true',
          BOXAUTH_SIGN_UP_MAX_PER_ADDRESS: '1000',
          BOXAUTH_SIGN_UP_MAX_PER_BOX: '1000',
          BOXAUTH_MAIL_MAX_PER_RECIPIENT: '1000',
        },
      });
    });
    after(async function () {
      await box?.stop();
    });

    it('a sign-up opens with the mailed link; a sign-in before it is refused and mails a new link', async function () {
      const email = fresh('ann');
      const res = await signUp(box, email);
      expect(res.status, res.text).to.equal(200);
      expect(res.text).to.include('Check your mail');
      const mail = await smtp.waitForMail((m) => m.to.includes(email));
      const link = linkIn(mail, '/auth/verify-email');

      // A sign-in before it answers as a wrong password does (a taken address at sign-up would), and mails the link again.
      const nobody = fresh('nobody');
      const early = await new FormAgent(box).signIn(email, PASSWORD);
      const wrong = await new FormAgent(box).signIn(nobody, PASSWORD);
      const shown = (res: JsonResponse, address: string): string =>
        res.text.replaceAll(address, 'X').replace(/name="csrf" value="[^"]*"/, '');
      expect(early.status).to.equal(401);
      expect(wrong.status).to.equal(401);
      expect(shown(early, email)).to.equal(shown(wrong, nobody));
      expect(early.text).to.include('Just signed up? Follow the link in the mail we sent you first.');
      await smtp.waitForMail(() => smtp.mailsTo(email).length >= 2);

      // A mail scanner following the link changes nothing: the page asks for the account's password.
      expect((await new FormAgent(box).get(link)).text).to.include('Confirm my address');
      expect((await userOf(box, email)).email_verified).to.equal(false);
      const done = await confirm(box, link);
      expect(done.status, done.text).to.equal(200);
      expect(done.text).to.include('is confirmed as your address');
      expect((await userOf(box, email)).email_verified).to.equal(true);
      expect((await new FormAgent(box).signIn(email, PASSWORD)).status).to.equal(303);
      expect((await confirm(box, link)).status, 'a link works once').to.equal(400);
    });

    it('a taken address gets the same page as a new one, as fast; its holder is told by mail', async function () {
      const taken = fresh('taken');
      await signUp(box, taken);
      await smtp.waitForMail((m) => m.to.includes(taken));
      const newOne = fresh('new');
      const a = await signUp(box, taken);
      const b = await signUp(box, newOne);
      expect(a.status).to.equal(b.status);
      expect(a.text.replaceAll(taken, 'X')).to.equal(b.text.replaceAll(newOne, 'X'));
      const told = await smtp.waitForMail((m) => m.to.includes(taken) && !/token=/.test(m.parsed.text ?? ''));
      expect(told.parsed.text).to.include('/auth/reset');

      const times: Record<'taken' | 'new', number[]> = { taken: [], new: [] };
      for (let i = 0; i < 5; i++) {
        for (const [kind, email] of [
          ['taken', taken],
          ['new', fresh(`new-${i}`)],
        ] as const) {
          const start = performance.now();
          expect((await signUp(box, email)).status).to.equal(200);
          times[kind].push(performance.now() - start);
        }
      }
      // Both hash the password (the slow part): a taken address answered before it would be far quicker.
      const gap = Math.abs(median(times.taken) - median(times.new));
      expect(gap, JSON.stringify(times)).to.be.below(median(times.new) * 0.5);
    });

    it('the holder of an address cannot be made to confirm an account someone else made with it', async function () {
      // A stranger signs up with the victim's address and a password of their own.
      const victim = fresh('victim');
      await signUp(box, victim);
      const link = linkIn(await smtp.waitForMail((m) => m.to.includes(victim)), '/auth/verify-email');
      // The victim follows the link and, not knowing that password, cannot confirm; nor can a guess.
      const refused = await confirm(box, link, 'the-victims-own-password');
      expect(refused.status).to.equal(401);
      expect(refused.text).to.include('not the password of this account');
      expect((await userOf(box, victim)).email_verified).to.equal(false);
      expect((await new FormAgent(box).signIn(victim, PASSWORD)).status, 'the account stays closed').to.equal(401);
    });

    it('an address with a header in it is refused at sign-up, and nobody is mailed', async function () {
      const evil = fresh('evil');
      const res = await signUp(box, `${fresh('x')}\r\nBcc: ${evil}`);
      expect(res.status).to.equal(422);
      await new Promise((r) => setTimeout(r, 1000));
      expect(smtp.received.filter((m) => m.to.includes(evil))).to.have.length(0);
    });

    it("a link to the old address does nothing once the address changed; the new address's does", async function () {
      const old = fresh('old');
      await signUp(box, old);
      const oldLink = linkIn(await smtp.waitForMail((m) => m.to.includes(old)), '/auth/verify-email');
      // Before the person follows it, an administrator corrects their address.
      const id = (await userOf(box, old)).id;
      const email = fresh('corrected');
      const put = await box.json('PUT', `/users/${id}`, { email }, await box.rootToken());
      expect(put.status, put.text).to.equal(200);
      const newLink = linkIn(await smtp.waitForMail((m) => m.to.includes(email)), '/auth/verify-email');

      expect((await confirm(box, oldLink)).status).to.equal(400);
      expect((await userOf(box, email)).email_verified).to.equal(false);
      expect((await new FormAgent(box).signIn(email, PASSWORD)).status, 'the account is still closed').to.equal(401);
      expect((await confirm(box, newLink)).status).to.equal(200);
      expect((await userOf(box, email)).email_verified).to.equal(true);
      expect((await new FormAgent(box).signIn(email, PASSWORD)).status).to.equal(303);
    });

    it("an address asked for on the account page becomes the person's when its link is followed with their password", async function () {
      const first = fresh('first');
      await signUp(box, first);
      expect((await confirm(box, linkIn(await smtp.waitForMail((m) => m.to.includes(first)), '/auth/verify-email'))).status).to.equal(200);
      const browser = new FormAgent(box);
      expect((await browser.signIn(first, PASSWORD, '/auth/account')).status).to.equal(303);
      const ask = async (email: string): Promise<JsonResponse> => {
        const page = await browser.get('/auth/account');
        const form = /<form method="post" action="\/auth\/account\/email">([\s\S]*?)<\/form>/.exec(page.text)![1]!;
        return browser.post('/auth/account/email', { ...hiddenFields(form), new_email: email, email_password: PASSWORD });
      };
      const email = fresh('second');
      const asked = await ask(email);
      expect(asked.status, asked.text).to.equal(303);
      const after = await browser.get(asked.headers.get('location')!);
      expect(after.text).to.include('A link went to the new address');
      // Nothing is theirs yet: the address is as it was, and still confirmed.
      expect((await userOf(box, first)).email_verified).to.equal(true);
      const link = linkIn(await smtp.waitForMail((m) => m.to.includes(email)), '/auth/confirm-email');
      expect((await confirm(box, link, 'not-the-password-1')).status, 'the link alone does not do it').to.equal(401);
      expect((await confirm(box, link)).status).to.equal(200);
      expect((await userOf(box, email)).email_verified).to.equal(true);
      expect((await browser.get('/auth/account')).text)
        .to.include(email)
        .and.include('(confirmed)');
      // The old address is told.
      const told = await smtp.waitForMail((m) => m.to.includes(first) && (m.parsed.subject ?? '').includes('was changed'));
      expect(told.parsed.text).to.include(email);
      expect((await confirm(box, link)).status, 'once').to.equal(400);
    });

    it("another person's address asked for gets the same answer, changes nothing, and mails its holder nothing", async function () {
      const holder = fresh('holder');
      await signUp(box, holder);
      await smtp.waitForMail((m) => m.to.includes(holder));
      const mailsBefore = smtp.mailsTo(holder).length;
      const squatter = fresh('squatter');
      await signUp(box, squatter);
      expect((await confirm(box, linkIn(await smtp.waitForMail((m) => m.to.includes(squatter)), '/auth/verify-email'))).status).to.equal(
        200,
      );
      const browser = new FormAgent(box);
      expect((await browser.signIn(squatter, PASSWORD, '/auth/account')).status).to.equal(303);
      const page = await browser.get('/auth/account');
      const form = /<form method="post" action="\/auth\/account\/email">([\s\S]*?)<\/form>/.exec(page.text)![1]!;
      const asked = await browser.post('/auth/account/email', { ...hiddenFields(form), new_email: holder, email_password: PASSWORD });
      const free = await browser.post('/auth/account/email', { ...hiddenFields(form), new_email: fresh('free'), email_password: PASSWORD });
      expect(asked.status).to.equal(free.status);
      expect(asked.headers.get('location')).to.equal(free.headers.get('location'));
      await new Promise((r) => setTimeout(r, 1500));
      expect(smtp.mailsTo(holder).length, 'nothing for the holder to click').to.equal(mailsBefore);
      expect((await userOf(box, squatter)).email).to.equal(squatter);
    });
  });

  describe('after the first sign-in (BOXAUTH_REGISTRATION_VERIFY=after-sign-in)', function () {
    let box: Box;
    before(async function () {
      box = await Box.start({ env: { ...smtp.boxEnv(), BOXAUTH_REGISTRATION: 'true', BOXAUTH_REGISTRATION_VERIFY: 'after-sign-in' } });
    });
    after(async function () {
      await box?.stop();
    });

    it('signs the person in at once, and the mailed link proves the address later', async function () {
      const email = fresh('bob');
      const browser = new FormAgent(box);
      const res = await signUp(box, email, browser);
      expect(res.status, res.text).to.equal(303);
      expect((await browser.get('/auth/signed-in')).text).to.include(email);
      expect((await userOf(box, email)).email_verified).to.equal(false);
      const link = linkIn(await smtp.waitForMail((m) => m.to.includes(email)), '/auth/verify-email');
      expect((await confirm(box, link)).status).to.equal(200);
      expect((await userOf(box, email)).email_verified).to.equal(true);
    });
  });

  it('before-sign-in without mail is refused at start, naming what is missing', async function () {
    let failed: unknown;
    try {
      const box = await Box.start({ env: { BOXAUTH_REGISTRATION: 'true', BOXAUTH_REGISTRATION_VERIFY: 'before-sign-in' } });
      await box.stop();
    } catch (err) {
      failed = err;
    }
    expect(String(failed)).to.include('BOXAUTH_SMTP_URL');
  });
});
