// Turning a person off voids every mailed link of theirs (issue 49 item 8), not only reset links:
// a verify link and a change-of-address link waiting in their mailbox answer the page of a link
// that does not work, and the outbox, which makes a link when it sends, makes none for a person
// turned off — a mail asked for before the turn-off and sent after, or one an administrator's
// change asks for while they are off. A real SMTP server receives what the box sends.
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { Box, eventually } from '../support/box.js';
import { FormAgent, formFields } from '../support/form-agent.js';
import { TestSmtp, type ReceivedMail } from '../support/smtp.js';

const PASSWORD = 'a-good-password-1';

/** The path and query of the link to `path` in a mail. */
function linkIn(mail: ReceivedMail, path: string): string {
  const found = new RegExp(`https?://[^\\s"<>]+${path}\\?token=[A-Za-z0-9_-]+`).exec(mail.parsed.text ?? '');
  expect(found, `a ${path} link in: ${mail.parsed.text}`).to.not.equal(null);
  const url = new URL(found![0]);
  return `${url.pathname}${url.search}`;
}

describe('turning a person off voids their mailed links', function () {
  this.timeout(120_000);
  let smtp: TestSmtp;
  let box: Box;
  let root: string;
  let db: pg.Client;

  before(async function () {
    smtp = await TestSmtp.start();
    box = await Box.start({ env: { ...smtp.boxEnv(), BOXAUTH_MAIL_MAX_PER_RECIPIENT: '1000' } });
    root = await box.rootToken();
    db = new pg.Client({ connectionString: box.databaseUrl });
    await db.connect();
  });
  after(async function () {
    await db?.end();
    await box?.stop();
    await smtp?.stop();
  });

  const fresh = (what: string): string => `${what}-${randomBytes(4).toString('hex')}@example.com`;
  const count = async (table: 'account_links' | 'mail_outbox', id: number): Promise<number> =>
    (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE user_id = $1`, [id])).rows[0]!.n;
  const turnOff = async (id: number): Promise<void> => {
    const res = await box.json('PUT', `/users/${id}`, { active: false }, root);
    expect(res.status, res.text).to.equal(200);
    expect(res.body.active).to.equal(false);
  };

  /** A person of the box (unproven when `verified` is false: a verify link is mailed), signed in on their account page. */
  async function person(email: string, verified: boolean): Promise<{ id: number; browser: FormAgent }> {
    const made = await box.json('POST', '/users', { email, password: PASSWORD, email_verified: verified }, root);
    expect(made.status, made.text).to.equal(201);
    const browser = new FormAgent(box);
    expect((await browser.signIn(email, PASSWORD)).status).to.equal(303);
    return { id: made.body.id as number, browser };
  }

  /** The person asks for a new address on their account page (a change link is mailed to it). */
  async function askNewAddress(browser: FormAgent, address: string): Promise<void> {
    const form = formFields((await browser.get('/auth/account')).text, '/auth/account/email');
    const asked = await browser.post('/auth/account/email', { ...form, new_email: address, email_password: PASSWORD });
    expect(asked.status, asked.text).to.equal(303);
  }

  it('a verify link and a change link waiting in the mailbox answer the page of a link that does not work', async function () {
    const email = fresh('off');
    const { id, browser } = await person(email, false);
    const verify = linkIn(await smtp.waitForMail((m) => m.to.includes(email)), '/auth/verify-email');
    const newAddress = fresh('new');
    await askNewAddress(browser, newAddress);
    const change = linkIn(await smtp.waitForMail((m) => m.to.includes(newAddress)), '/auth/confirm-email');
    for (const link of [verify, change]) expect((await new FormAgent(box).get(link)).status, `${link} before`).to.equal(200);

    await turnOff(id);
    for (const link of [verify, change]) {
      const page = await new FormAgent(box).get(link);
      expect(page.status, link).to.equal(400);
      expect(page.text).to.include('This link does not work');
    }
    // Turned on again, the links stay void: they are gone, not only refused while the person is off.
    expect((await box.json('PUT', `/users/${id}`, { active: true }, root)).status).to.equal(200);
    for (const link of [verify, change]) expect((await new FormAgent(box).get(link)).status, `${link} turned on`).to.equal(400);
    expect(await count('account_links', id)).to.equal(0);
    expect((await box.json('GET', `/users/${id}`, undefined, root)).body).to.include({ email, email_verified: false });
  });

  it('a link mailed after the turn-off is not made: a change asked before it, an address given while off', async function () {
    const email = fresh('late');
    const { id, browser } = await person(email, true);
    // The mail server refuses for a while: the change's mail waits in the outbox, its link not made yet.
    await smtp.setMode({ kind: 'failing' });
    const tried = smtp.attempts;
    const newAddress = fresh('late-new');
    try {
      await askNewAddress(browser, newAddress);
      await eventually('the first attempt refused', async () => smtp.attempts > tried);
      await turnOff(id);
    } finally {
      await smtp.setMode({ kind: 'up' });
    }
    // Its next attempt finds the person turned off: no link, no mail, the row gone.
    await eventually('the outbox tried again', async () => (await count('mail_outbox', id)) === 0, 60_000);
    expect(await count('account_links', id)).to.equal(0);
    expect(smtp.mailsTo(newAddress)).to.have.length(0);

    // An administrator gives the person turned off a new address, unvouched: no verify link goes
    // to it; the old address is told, as at every change.
    const given = fresh('given');
    expect((await box.json('PUT', `/users/${id}`, { email: given }, root)).status).to.equal(200);
    await smtp.waitForMail((m) => m.to.includes(email) && (m.parsed.text ?? '').includes(given));
    await eventually('the outbox done', async () => (await count('mail_outbox', id)) === 0);
    expect(await count('account_links', id)).to.equal(0);
    expect(smtp.mailsTo(given)).to.have.length(0);
  });
});

describe('an account adopted by vouching: the address is its owner’s way in', function () {
  this.timeout(120_000);
  let smtp: TestSmtp;
  let box: Box;

  before(async function () {
    smtp = await TestSmtp.start();
    box = await Box.start({ env: { ...smtp.boxEnv(), BOXAUTH_REGISTRATION: 'true' } });
  });
  after(async function () {
    await box?.stop();
    await smtp?.stop();
  });

  it("the maker's password ends, and a reset link to the vouched-for address lets its owner set one", async function () {
    const email = `hire-${randomBytes(4).toString('hex')}@example.com`;
    // A stranger signs up with the address and never proves it.
    const stranger = new FormAgent(box);
    const form = await stranger.get('/auth/sign-up');
    const signedUp = await stranger.post('/auth/sign-up', {
      ...formFields(form.text, '/auth/sign-up'),
      email,
      password: 'the-strangers-pw-1',
    });
    expect(signedUp.status, signedUp.text).to.be.oneOf([200, 303]);
    const root = await box.rootToken();
    const found = await box.json('GET', `/users?email=${encodeURIComponent(email)}`, undefined, root);
    const id = Number((found.body.entry?.[0]?.resource ?? found.body[0]).id);
    expect((await box.json('PUT', `/users/${id}`, { email_verified: true }, root)).status).to.equal(200);
    expect((await new FormAgent(box).signIn(email, 'the-strangers-pw-1')).status, "the maker's password").to.equal(401);
    // The owner of the mailbox asks for a reset, gets the link, and sets their own password.
    const owner = new FormAgent(box);
    const ask = await owner.get('/auth/reset');
    expect((await owner.post('/auth/reset', { ...formFields(ask.text, '/auth/reset'), email })).status).to.equal(200);
    const link = linkIn(await smtp.waitForMail((m) => m.to.includes(email) && /Reset/.test(m.parsed.subject ?? '')), '/auth/reset/confirm');
    const page = await owner.get(link);
    const reset = await owner.post('/auth/reset/confirm', {
      ...formFields(page.text, '/auth/reset/confirm'),
      password: 'the-owners-pw-22',
    });
    expect(reset.status, reset.text).to.equal(200);
    expect((await new FormAgent(box).signIn(email, 'the-owners-pw-22')).status).to.equal(303);
  });
});
