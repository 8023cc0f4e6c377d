// The box's mail, sent to a real SMTP server (test/support/smtp.ts) over STARTTLS with AUTH:
// what arrives, when the server is down, slow or refusing, with two processes sharing the
// outbox, with a process killed mid-send, and a recipient that tries to be two.
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createPool, type Pool } from '../../api/db/pool.js';
import { enqueueMail, type MailRequest } from '../../api/store/mail-outbox.js';
import { createUser } from '../../api/store/users.js';
import { Box, eventually, sleep } from '../support/box.js';
import { TestSmtp, type ReceivedMail } from '../support/smtp.js';
import { testCa } from '../support/tls.js';

const ca = testCa();

async function person(pool: Pool, email: string, emailVerified = false): Promise<number> {
  return (await createUser(pool, { email, passwordHash: 'x', data: null, groupIds: [], emailVerified })).id;
}

const outboxSize = async (pool: Pool): Promise<number> => Number((await pool.query('SELECT count(*) AS n FROM mail_outbox')).rows[0].n);

function linkIn(mail: ReceivedMail, page: string): string {
  const found = new RegExp(`https?://[^\\s"<>]+${page.replaceAll('/', '\\/')}\\?token=([A-Za-z0-9_-]+)`).exec(mail.parsed.text ?? '');
  if (!found) throw new Error(`no ${page} link in: ${mail.parsed.text}`);
  return found[1]!;
}

/** Every row of every table of the box's schema, as text, holding `needle`: the tables' names. */
async function tablesHolding(pool: Pool, needle: string): Promise<string[]> {
  const { rows } = await pool.query<{ t: string }>('SELECT tablename AS t FROM pg_tables WHERE schemaname = current_schema()');
  const holding: string[] = [];
  for (const { t } of rows) {
    const hit = await pool.query(`SELECT 1 FROM "${t}" r WHERE r::text LIKE $1 LIMIT 1`, [`%${needle}%`]);
    if (hit.rowCount) holding.push(t);
  }
  return holding;
}

describe('mail through a real SMTP server', function () {
  this.timeout(120_000);
  let smtp: TestSmtp;
  let box: Box;
  let pool: Pool;
  let templates: string;

  before(async function () {
    smtp = await TestSmtp.start(ca);
    templates = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-mail-templates-'));
    fs.writeFileSync(
      path.join(templates, 'password-reset.de.txt'),
      'Subject: Passwort für {{box}} zurücksetzen\n\nHallo {{email}}, hier ist dein Link ({{minutes}} Minuten):\n{{link}}\n',
    );
    fs.writeFileSync(
      path.join(templates, 'password-reset.de.html'),
      '<p>Hallo {{email}}</p><p><a href="{{link}}">Neues Passwort</a></p>\n',
    );
    box = await Box.start({ env: { ...smtp.boxEnv({ password: 'env' }), BOXAUTH_MAIL_TEMPLATES: templates } });
    pool = createPool(box.databaseUrl!, 3);
  });

  after(async function () {
    await box?.stop();
    await pool?.end();
    await smtp?.stop();
  });

  afterEach(async function () {
    await smtp.setMode({ kind: 'up' });
  });

  it('starts with SMTP set without a MaxListenersExceededWarning (the change feed has a subscriber per cache, not a leak)', function () {
    // The outbox's subscription was the eleventh to the feed's 'reset': Node warned at every start.
    expect(box.logs.filter((line) => /MaxListenersExceeded|memory leak/i.test(line))).to.deep.equal([]);
  });

  it('a verify-email mail arrives over STARTTLS with AUTH, as text and HTML, its token stored only as a SHA-256', async function () {
    const id = await person(pool, 'ann@example.com');
    await enqueueMail(pool, { kind: 'verify-email', address: 'ann@example.com', userId: id });
    const mail = await smtp.waitForMail((m) => m.to.includes('ann@example.com'));
    expect(mail.secure, 'STARTTLS').to.equal(true);
    expect(mail.user).to.equal(smtp.user);
    expect(mail.from).to.equal('no-reply@box.test');
    expect(mail.parsed.subject).to.equal(`Confirm your email address on ${new URL(box.url).host}`);
    expect(mail.parsed.to && !Array.isArray(mail.parsed.to) ? mail.parsed.to.text : '').to.equal('ann@example.com');
    const token = linkIn(mail, '/auth/verify-email');
    expect(mail.parsed.text).to.include(`${box.url}/auth/verify-email?token=${token}`);
    expect(mail.parsed.html).to.include(`href="${box.url}/auth/verify-email?token=${token}"`);
    const hash = createHash('sha256').update(token).digest();
    const link = await pool.query(
      "SELECT purpose, user_id, email, expires_at - now() > interval '23 hours' AS long FROM account_links WHERE token_hash = $1",
      [hash],
    );
    expect(link.rows).to.deep.equal([{ purpose: 'verify', user_id: id, email: 'ann@example.com', long: true }]);
    expect(await tablesHolding(pool, token), 'the token in the database').to.deep.equal([]);
    expect(box.logs.join('\n')).not.to.include(token);
    await eventually('the row gone', async () => (await outboxSize(pool)) === 0);
  });

  it('a password reset goes to the stored address, not the typed one; an address nobody holds gets nothing', async function () {
    const id = await person(pool, 'Bob.Stored@Example.com', true);
    await enqueueMail(pool, { kind: 'password-reset', address: 'bob.stored@example.COM' });
    await enqueueMail(pool, { kind: 'password-reset', address: 'nobody@example.com' });
    const mail = await smtp.waitForMail((m) => m.to.includes('Bob.Stored@Example.com'));
    expect(mail.parsed.subject).to.match(/^Reset your password on /);
    const token = linkIn(mail, '/auth/reset/confirm');
    const link = await pool.query(
      "SELECT purpose, user_id, email, expires_at - now() BETWEEN interval '29 minutes' AND interval '30 minutes' AS lives FROM account_links WHERE token_hash = $1",
      [createHash('sha256').update(token).digest()],
    );
    expect(link.rows).to.deep.equal([{ purpose: 'reset', user_id: id, email: 'Bob.Stored@Example.com', lives: true }]);
    await eventually('the outbox empty', async () => (await outboxSize(pool)) === 0);
    expect(
      smtp.received.filter((m) => m.to.some((t) => /bob\.stored@example\.com$/i.test(t) && t !== 'Bob.Stored@Example.com')),
    ).to.have.length(0);
    expect(smtp.mailsTo('nobody@example.com')).to.have.length(0);
  });

  it('already-registered links to sign-in and reset, with no token; a verified address gets no verify mail', async function () {
    const id = await person(pool, 'cleo@example.com', true);
    await enqueueMail(pool, { kind: 'verify-email', address: 'cleo@example.com', userId: id });
    await enqueueMail(pool, { kind: 'already-registered', address: 'cleo@example.com', userId: id });
    const mail = await smtp.waitForMail((m) => m.to.includes('cleo@example.com'));
    expect(mail.parsed.text).to.include(`${box.url}/auth/sign-in`).and.to.include(`${box.url}/auth/reset`).and.not.to.include('token=');
    await eventually('the outbox empty', async () => (await outboxSize(pool)) === 0);
    expect(smtp.mailsTo('cleo@example.com')).to.have.length(1);
  });

  it("a template of the mail's language overrides the built-in one, its values escaped in HTML", async function () {
    await person(pool, "o'neil&co@example.com", true);
    await enqueueMail(pool, { kind: 'password-reset', address: "o'neil&co@example.com", language: 'de-CH' });
    const mail = await smtp.waitForMail((m) => m.to.includes("o'neil&co@example.com"));
    expect(mail.parsed.subject).to.equal(`Passwort für ${new URL(box.url).host} zurücksetzen`);
    expect(mail.parsed.text).to.include("Hallo \u2068o'neil&co@example.com\u2069, hier ist dein Link (30 Minuten)");
    expect(mail.parsed.html).to.include('<p>Hallo <bdi>o&#39;neil&#38;co@example.com</bdi></p>');
    // Another language: the default (built-in English) template.
    await person(pool, 'dora@example.com', true);
    await enqueueMail(pool, { kind: 'password-reset', address: 'dora@example.com', language: 'fr' });
    expect((await smtp.waitForMail((m) => m.to.includes('dora@example.com'))).parsed.subject).to.match(/^Reset your password/);
  });

  it('a name holding U+202E is isolated: in the text between U+2068 and U+2069, in the HTML in <bdi>', async function () {
    // An address and a passkey name the box refuses now (bidi controls), kept from before it did: unisolated,
    // the right-to-left override drew the rest of the sentence backwards in the reader's mail program.
    const changed = 'zo\u202Ee@example.com';
    const id = await person(pool, changed, true);
    await enqueueMail(pool, { kind: 'email-changed', address: 'zoe.before@example.com', userId: id });
    const told = await smtp.waitForMail((m) => m.to.includes('zoe.before@example.com'));
    expect(told.parsed.text).to.include(
      `was changed from \u2068zoe.before@example.com\u2069 to \u2068${changed}\u2069.\n\nIf you changed it`,
    );
    expect(told.parsed.html).to.include(`was changed from <bdi>zoe.before@example.com</bdi> to <bdi>${changed}</bdi>.</p>`);

    const yan = await person(pool, 'yan.factors@example.com', true);
    const detail = JSON.stringify({ factor: 'passkey', name: 'Laptop\u202E' });
    await enqueueMail(pool, { kind: 'factor-added', address: 'yan.factors@example.com', userId: yan, detail });
    await enqueueMail(pool, { kind: 'factor-added', address: 'yan.factors@example.com', userId: yan, detail, language: 'de' });
    await eventually('both mails', async () => smtp.mailsTo('yan.factors@example.com').length === 2);
    const [english, german] = ['A way to sign in was added', 'Anmeldemethode'].map((subject) =>
      smtp.mailsTo('yan.factors@example.com').find((m) => (m.parsed.subject ?? '').includes(subject))!,
    );
    expect(english!.parsed.text).to.include(
      'a passkey named “\u2068Laptop\u202E\u2069” was added to the account of \u2068yan.factors@example.com\u2069.',
    );
    expect(english!.parsed.html).to.include(
      'a passkey named “<bdi>Laptop\u202E</bdi>” was added to the account of <bdi>yan.factors@example.com</bdi>.',
    );
    expect(german!.parsed.text).to.include('ein Passkey namens „\u2068Laptop\u202E\u2069“');
    expect(german!.parsed.html).to.include('ein Passkey namens „<bdi>Laptop\u202E</bdi>“');
  });

  it("a mail no page asked for (an administrator's change through the API) is in the person's language, else the box's", async function () {
    const root = await box.rootToken();
    const made = async (email: string, data?: object): Promise<string> => {
      const body = { email, password: 'first-password-1', email_verified: true, ...(data ? { data: JSON.stringify(data) } : {}) };
      const res = await box.json('POST', '/users', body, root);
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      return String((res.body as { id: string }).id);
    };
    const greta = await made('greta@example.com', { locale: 'de-AT' });
    const hank = await made('hank@example.com');
    for (const id of [greta, hank])
      expect((await box.json('PUT', `/users/${id}`, { password: 'second-password-2' }, root)).status).to.equal(200);
    const german = await smtp.waitForMail((m) => m.to.includes('greta@example.com'));
    expect(german.parsed.subject).to.equal(`Das Passwort Ihres Kontos bei ${new URL(box.url).host} wurde geändert`);
    expect(german.parsed.text).to.include('wurde das Passwort des Kontos von \u2068greta@example.com\u2069 geändert');
    const english = await smtp.waitForMail((m) => m.to.includes('hank@example.com'));
    expect(english.parsed.subject).to.equal(`The password of your account on ${new URL(box.url).host} was changed`);
  });

  it('a server that is down when the mail is enqueued: the mail arrives once it is up, once', async function () {
    await person(pool, 'eve.retry@example.com', true);
    await smtp.setMode({ kind: 'stopped' });
    await enqueueMail(pool, { kind: 'password-reset', address: 'eve.retry@example.com' });
    const failed = await eventually('a failed attempt recorded', async () => {
      const { rows } = await pool.query('SELECT attempts, last_error FROM mail_outbox');
      return rows[0]?.last_error ? rows[0] : undefined;
    });
    expect(failed.last_error).to.match(/ECONNREFUSED|connect/i);
    await smtp.setMode({ kind: 'up' });
    await smtp.waitForMail((m) => m.to.includes('eve.retry@example.com'));
    await eventually('the outbox empty', async () => (await outboxSize(pool)) === 0);
    await sleep(1000);
    expect(smtp.mailsTo('eve.retry@example.com')).to.have.length(1);
    // The links of the failed attempts went with them: the one that works is the one mailed.
    const links = await pool.query('SELECT token_hash FROM account_links WHERE email = $1', ['eve.retry@example.com']);
    const mailed = createHash('sha256')
      .update(linkIn(smtp.mailsTo('eve.retry@example.com')[0]!, '/auth/reset/confirm'))
      .digest();
    expect(links.rows.map((r) => r.token_hash.toString('hex'))).to.deep.equal([mailed.toString('hex')]);
  });

  it('a server refusing with 451: tried again, and sent once it takes mail', async function () {
    await person(pool, 'fay@example.com', true);
    await smtp.setMode({ kind: 'failing' });
    const before = smtp.attempts;
    await enqueueMail(pool, { kind: 'password-reset', address: 'fay@example.com' });
    await eventually('a refused attempt', async () => smtp.attempts > before);
    const { rows } = await pool.query('SELECT last_error FROM mail_outbox');
    expect(rows[0]?.last_error).to.match(/451/);
    await smtp.setMode({ kind: 'up' });
    await smtp.waitForMail((m) => m.to.includes('fay@example.com'));
    expect(smtp.mailsTo('fay@example.com')).to.have.length(1);
  });

  it('a slow server holds no request: the box answers while a send waits, and the mail still arrives', async function () {
    await person(pool, 'gus@example.com', true);
    await smtp.setMode({ kind: 'slow', seconds: 2 });
    const connected = smtp.connections;
    await enqueueMail(pool, { kind: 'password-reset', address: 'gus@example.com' });
    await eventually('the send under way', async () => smtp.connections > connected);
    const answers = await Promise.all(Array.from({ length: 30 }, () => box.request('GET', '/.well-known/openid-configuration')));
    expect(answers.map((a) => a.status)).to.deep.equal(answers.map(() => 200));
    expect(smtp.mailsTo('gus@example.com'), 'answered while the send was stuck').to.have.length(0);
    await smtp.waitForMail((m) => m.to.includes('gus@example.com'), 60_000);
  });

  it('a recipient that would be two (a line break, a Bcc header) is refused: nobody gets that mail', async function () {
    const evil = 'evil@x.test';
    for (const email of [`mallory@example.com\r\nBcc: ${evil}`, `mallory2@example.com, ${evil}`]) {
      const id = await person(pool, email);
      await enqueueMail(pool, { kind: 'verify-email', address: email, userId: id });
    }
    await eventually('the outbox empty', async () => (await outboxSize(pool)) === 0);
    await sleep(500);
    expect(smtp.received.filter((m) => m.to.some((t) => t.includes('evil') || t.includes('mallory')))).to.deep.equal([]);
    expect(smtp.received.filter((m) => JSON.stringify(m.parsed.headers ? [...m.parsed.headers] : []).includes('evil'))).to.deep.equal([]);
    const givenUp = box.logs.filter((l) => l.includes('"mail-given-up"'));
    expect(givenUp).to.have.length(2);
  });

  it('the SMTP password is in no log line (it came from BOXAUTH_SMTP_PASSWORD)', function () {
    expect(box.logs.join('\n')).not.to.include(smtp.password);
  });
});

describe('mail from two processes of one box', function () {
  this.timeout(180_000);
  let smtp: TestSmtp;
  let boxes: Box[] = [];
  let pool: Pool;

  before(async function () {
    smtp = await TestSmtp.start(ca);
    // A short lease: a killed process's mail is taken over within seconds (BOXAUTH_MAIL_LEASE_SECONDS).
    const env = { ...smtp.boxEnv(), BOXAUTH_MAIL_LEASE_SECONDS: '6' };
    const first = await Box.start({ env });
    boxes = [first, await first.startAnother(env)];
    pool = createPool(first.databaseUrl!, 3);
  });

  after(async function () {
    for (const b of boxes) await b.stop();
    await pool?.end();
    await smtp?.stop();
  });

  it('sends each of many mails exactly once', async function () {
    const mails: MailRequest[] = [];
    for (let i = 0; i < 40; i++) {
      const email = `many${i}@example.com`;
      mails.push({ kind: 'verify-email', address: email, userId: await person(pool, email) });
    }
    await Promise.all(mails.map((m) => enqueueMail(pool, m)));
    await eventually('40 mails', async () => smtp.received.length >= 40, 60_000);
    await eventually('the outbox empty', async () => (await outboxSize(pool)) === 0);
    await sleep(2000);
    const counts = new Map<string, number>();
    for (const m of smtp.received) for (const to of m.to) counts.set(to, (counts.get(to) ?? 0) + 1);
    expect(
      [...counts.values()].every((n) => n === 1),
      JSON.stringify([...counts]),
    ).to.equal(true);
    expect(counts.size).to.equal(40);
    const sentBy = boxes.map((b) => b.logs.filter((l) => l.includes('"mail sent"')).length);
    expect(sentBy.reduce((a, b) => a + b)).to.equal(40);
  });

  it('a process killed mid-send: its mail arrives from the other once the lease ends', async function () {
    const [sender, other] = boxes as [Box, Box];
    await other.stop(); // the mail is the sender's to take
    await person(pool, 'killed@example.com', true);
    await smtp.setMode({ kind: 'slow', seconds: 30 });
    const connected = smtp.connections;
    await enqueueMail(pool, { kind: 'password-reset', address: 'killed@example.com' });
    await eventually('the send under way', async () => smtp.connections > connected);
    await sender.kill('SIGKILL');
    await smtp.setMode({ kind: 'up' });
    const killedAt = Date.now();
    await other.launch();
    const mail = await smtp.waitForMail((m) => m.to.includes('killed@example.com'), 30_000);
    expect(mail.to).to.deep.equal(['killed@example.com']);
    expect(Date.now() - killedAt).to.be.lessThan(20_000);
    await sleep(1000);
    expect(smtp.mailsTo('killed@example.com')).to.have.length(1);
    await sender.launch();
  });
});

describe('a box stopped while a send is stuck', function () {
  this.timeout(60_000);

  it('stops within its drain (BOXAUTH_SHUTDOWN_TIMEOUT_MS), leaving the mail in the outbox for its lease', async function () {
    const smtp = await TestSmtp.start(ca);
    const box = await Box.start({ env: { ...smtp.boxEnv(), BOXAUTH_SHUTDOWN_TIMEOUT_MS: '2000' } });
    const pool = createPool(box.databaseUrl!, 2);
    try {
      await person(pool, 'kim@example.com', true);
      await smtp.setMode({ kind: 'slow', seconds: 30 });
      const connected = smtp.connections;
      await enqueueMail(pool, { kind: 'password-reset', address: 'kim@example.com' });
      await eventually('the send under way', async () => smtp.connections > connected);
      const stopping = Date.now();
      expect(await box.kill('SIGTERM')).to.equal(0);
      expect(Date.now() - stopping).to.be.lessThan(6000);
      const { rows } = await pool.query("SELECT next_attempt_at > now() + interval '1 minute' AS leased FROM mail_outbox");
      expect(rows).to.deep.equal([{ leased: true }]);
    } finally {
      await box.stop();
      await pool.end();
      await smtp.stop();
    }
  });
});

describe('an SMTP server that cannot be reached', function () {
  this.timeout(60_000);

  it('logs why the mail failed, never the password of the URL', async function () {
    const password = 'Sup3r-Secret-Pw';
    const box = await Box.start({
      env: { BOXAUTH_SMTP_URL: `smtp://mailer:${password}@no-such-host.invalid:587`, BOXAUTH_SMTP_FROM: 'no-reply@box.test' },
    });
    const pool = createPool(box.databaseUrl!, 2);
    try {
      await person(pool, 'hal@example.com', true);
      await enqueueMail(pool, { kind: 'password-reset', address: 'hal@example.com' });
      await eventually('a failure logged', async () => box.logs.some((l) => l.includes('sending a mail failed')), 30_000);
      // The outbox row records the failure after the log line is written: wait for it too.
      const lastError = await eventually(
        'the failure recorded in the outbox',
        async () => ((await pool.query('SELECT last_error FROM mail_outbox')).rows[0]?.last_error as string | null) ?? undefined,
        30_000,
      );
      expect(lastError).to.be.a('string').and.not.to.include(password);
      expect(box.logs.join('\n')).not.to.include(password);
      expect(box.logs.join('\n')).not.to.include(encodeURIComponent(password));
    } finally {
      await box.stop();
      await pool.end();
    }
  });
});

describe('a mail server that offers no STARTTLS', function () {
  this.timeout(60_000);
  // An address of this machine that is not loopback: what the box must not send to in the clear.
  const outside = Object.values(os.networkInterfaces())
    .flat()
    .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;

  async function sendThrough(host: string): Promise<{ smtp: TestSmtp; box: Box; pool: Pool }> {
    const smtp = await TestSmtp.start(ca, { host, plaintext: true });
    const box = await Box.start({ env: smtp.boxEnv() });
    const pool = createPool(box.databaseUrl!, 2);
    await person(pool, 'ivy@example.com', true);
    await enqueueMail(pool, { kind: 'password-reset', address: 'ivy@example.com' });
    return { smtp, box, pool };
  }

  it('gets no mail from an smtp:// URL to a host that is not loopback: the box refuses to send in the clear', async function () {
    if (!outside) this.skip();
    const { smtp, box, pool } = await sendThrough(outside);
    try {
      const failed = await eventually(
        'a failed attempt',
        async () => (await pool.query('SELECT last_error FROM mail_outbox')).rows[0]?.last_error || undefined,
      );
      expect(failed).to.match(/STARTTLS/i);
      expect(smtp.received).to.deep.equal([]);
      expect(smtp.attempts, 'not even a MAIL FROM').to.equal(0);
    } finally {
      await box.stop();
      await pool.end();
      await smtp.stop();
    }
  });

  it('to a loopback host, sends in the clear (nothing crosses a network)', async function () {
    const { smtp, box, pool } = await sendThrough('127.0.0.1');
    try {
      const mail = await smtp.waitForMail((m) => m.to.includes('ivy@example.com'));
      expect(mail.secure).to.equal(false);
    } finally {
      await box.stop();
      await pool.end();
      await smtp.stop();
    }
  });
});

describe('a template that names an unknown placeholder', function () {
  it('stops the box at start, naming the file and the placeholder', async function () {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-mail-templates-'));
    fs.writeFileSync(path.join(dir, 'verify-email.fr.txt'), 'Subject: Vérifiez\n\n{{lien}}\n');
    const started = Box.start({
      env: { BOXAUTH_SMTP_URL: 'smtp://127.0.0.1:2525', BOXAUTH_SMTP_FROM: 'a@box.test', BOXAUTH_MAIL_TEMPLATES: dir },
    });
    const err = await started.then(
      async (box) => {
        await box.stop();
        return undefined;
      },
      (e: unknown) => e as Error,
    );
    expect(err?.message).to.include('box exited with 2').and.include('BOXAUTH_MAIL_TEMPLATES: verify-email.fr (text) names {{lien}}');
  });
});

describe('a mail that fails for two days', function () {
  this.timeout(60_000);

  it('is given up: the row goes, with an audit event naming the address, and the metric counts it', async function () {
    const smtp = await TestSmtp.start(ca);
    await smtp.setMode({ kind: 'failing' });
    const box = await Box.start({ env: smtp.boxEnv(), movableClock: true });
    const pool = createPool(box.databaseUrl!, 2);
    try {
      const id = await person(pool, 'jan@example.com');
      await enqueueMail(pool, { kind: 'verify-email', address: 'jan@example.com', userId: id });
      await eventually(
        'a failed attempt',
        async () => (await pool.query('SELECT last_error FROM mail_outbox')).rows[0]?.last_error || undefined,
      );
      expect(await outboxSize(pool), 'one failure is not the end').to.equal(1);
      box.advanceClock(2 * 24 * 3600 + 60);
      await eventually('the row gone', async () => (await outboxSize(pool)) === 0, 30_000);
      const audit = box.logs
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((l) => l.action === 'mail-given-up');
      expect(audit).to.have.length(1);
      expect(audit[0]).to.deep.include({ audit: true, event: 'account', user: String(id), email: 'jan@example.com' });
      expect(await box.metrics()).to.match(/boxauth_mails_total\{kind="verify-email",result="given-up",box="default"\} 1/);
      expect(smtp.received).to.deep.equal([]);
    } finally {
      await box.stop();
      await pool.end();
      await smtp.stop();
    }
  });
});
