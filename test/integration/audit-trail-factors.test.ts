// The audit trail of what a person changes on the box's pages (docs/operations/audit.md, "Written
// with the change"): a second factor enrolled, removed or reset by a recovery code, recovery codes
// made, a passkey added or removed, a person made at sign-up or by an upstream provider, an upstream
// identity linked or unlinked. Each event is in GET /AuditEvent as soon as the page has answered
// (no waiting: it commits with the change), and a change whose event cannot be written does not
// happen.
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { SoftAuthenticator } from '../support/authenticator.js';
import { Box, type JsonResponse } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { base32Decode, stepAt, totpCode } from '../support/totp.js';
import { connectUpstream, TwoHostBrowser } from '../support/upstream.js';
import { startAll } from '../support/start-all.js';

const PASSWORD = 'a-good-password-1';

const secretOf = (page: JsonResponse): Buffer => base32Decode(/id="totp-secret">([A-Z2-7]+)</.exec(page.text)![1]!);
const codesOf = (page: JsonResponse): string[] => [...page.text.matchAll(/<li><code>([0-9a-z-]+)<\/code><\/li>/g)].map((m) => m[1]!);

/** The trail's events about `query`, newest first, as an administrator of the whole box reads them. */
async function eventsOf(box: Box, query: string): Promise<any[]> {
  const res = await box.json('GET', `/AuditEvent?${query}`, undefined, await box.rootToken());
  expect(res.status, res.text).to.equal(200);
  return (res.body.entry as { resource: any }[]).map((e) => e.resource);
}

/** The actions of a person's events of `event`, oldest first. */
const actionsOf = async (box: Box, userId: number, event: string): Promise<string[]> =>
  (await eventsOf(box, `user=${userId}&event=${event}`)).map((e) => e.action).reverse();

async function sql(box: Box, text: string): Promise<void> {
  const db = new pg.Client({ connectionString: box.databaseUrl });
  await db.connect();
  try {
    await db.query(text);
  } finally {
    await db.end();
  }
}

/** Runs `body` while the trail refuses every new event `refused` (SQL on audit_events) says is refused. */
async function whileRefusing(box: Box, refused: string, body: () => Promise<void>): Promise<void> {
  await sql(box, `ALTER TABLE audit_events ADD CONSTRAINT refused_by_test CHECK (NOT (${refused})) NOT VALID`);
  try {
    await body();
  } finally {
    await sql(box, 'ALTER TABLE audit_events DROP CONSTRAINT refused_by_test');
  }
}

describe('the audit trail of second factors: written with the change', function () {
  this.timeout(120_000);
  let box: Box;

  before(async function () {
    // Sign-up on (no mail: signed in at once, after-sign-in); the refusals here stay under the limits.
    box = await Box.start({ env: { BOXAUTH_REGISTRATION: 'true', BOXAUTH_SIGN_IN_MAX_FAILURES: '100' } });
  });
  after(async function () {
    await box?.stop();
  });

  /** A new person with a password, and a browser signed in as them just now (a recent proof: they may change their factors). */
  async function person(name: string): Promise<{ id: number; email: string; browser: FormAgent }> {
    const email = `${name}-${randomBytes(3).toString('hex')}@example.com`;
    const made = await box.json('POST', '/users', { email, password: PASSWORD }, await box.rootToken());
    expect(made.status, made.text).to.equal(201);
    const browser = new FormAgent(box);
    expect((await browser.signIn(email, PASSWORD, '/auth/account')).status).to.equal(303);
    return { id: Number(made.body.id), email, browser };
  }

  /** Sets up an authenticator app on the account page: the page the confirmation answered, and the app's key. */
  async function confirmApp(browser: FormAgent): Promise<{ done: JsonResponse; secret: Buffer }> {
    const setup = await browser.post('/auth/account/totp', hiddenFields((await browser.get('/auth/account')).text));
    expect(setup.status, setup.text).to.equal(200);
    const secret = secretOf(setup);
    const done = await browser.post('/auth/account/totp/confirm', {
      ...hiddenFields(setup.text),
      code: totpCode(secret, stepAt(Date.now())),
    });
    return { done, secret };
  }

  const factorsOf = async (id: number): Promise<any[]> => {
    const res = await box.json('GET', `/users/${id}/factors`, undefined, await box.rootToken());
    expect(res.status, res.text).to.equal(200);
    return (res.body.factors ?? res.body) as any[];
  };

  it('an app set up, codes made anew, the app removed: each event is in the trail when the page answers', async function () {
    const { id, browser } = await person('tia');
    const { done } = await confirmApp(browser);
    expect(done.status, done.text).to.equal(200);
    expect(codesOf(done)).to.have.length(10);
    const [codesMade, enrolled] = await eventsOf(box, `user=${id}&event=factor`);
    expect(enrolled).to.deep.include({ action: 'enrolled', outcome: 'success' });
    expect(enrolled.detail).to.include({ kind: 'totp', user: String(id) });
    expect(enrolled.detail.factor).to.match(/^\d+$/);
    expect(enrolled.actor).to.include({ user: String(id) });
    expect(codesMade.detail).to.include({ action: 'recovery-codes-made', kind: 'recovery-codes' });

    const account = await browser.get('/auth/account');
    const made = await browser.post('/auth/account/recovery-codes', { csrf: hiddenFields(account.text).csrf! });
    expect(made.status, made.text).to.equal(200);
    expect(await actionsOf(box, id, 'factor')).to.deep.equal(['enrolled', 'recovery-codes-made', 'recovery-codes-made']);

    const removed = await browser.post('/auth/account/factors/remove', hiddenFields((await browser.get('/auth/account')).text));
    expect(removed.status, removed.text).to.equal(200);
    const [last] = await eventsOf(box, `user=${id}&event=factor`);
    expect(last.detail).to.include({ action: 'removed', kind: 'totp', factor: enrolled.detail.factor });
    expect(last.detail.address).to.be.a('string');
  });

  it('a recovery code used: its use and the reset it causes are in the trail when the page answers', async function () {
    const { id, email, browser } = await person('rex');
    const { done } = await confirmApp(browser);
    const [code] = codesOf(done);
    const again = new FormAgent(box);
    expect((await again.signIn(email, PASSWORD)).status).to.equal(303);
    const page = await again.get('/auth/sign-in/second-factor');
    const used = await again.post('/auth/sign-in/second-factor', { ...hiddenFields(page.text), recovery_code: code! });
    expect(used.status, used.text).to.equal(303);
    expect(await actionsOf(box, id, 'factor')).to.deep.equal(['enrolled', 'recovery-codes-made', 'recovery-code-used', 'reset']);
    expect(await factorsOf(id)).to.deep.equal([]);
  });

  it('a passkey added and removed: each event is in the trail when the page answers', async function () {
    const { id, browser } = await person('pam');
    const key = new SoftAuthenticator(box.url);
    const csrf = { 'x-csrf-token': hiddenFields((await browser.get('/auth/account/passkeys')).text).csrf! };
    const options = await browser.postJson('/auth/passkeys/register/options', {}, csrf);
    expect(options.status, options.text).to.equal(200);
    const added = await browser.postJson('/auth/passkeys/register', { response: key.register(options.body), name: 'Laptop' }, csrf);
    expect(added.status, added.text).to.equal(200);
    const [enrolled] = await eventsOf(box, `user=${id}&event=factor`);
    expect(enrolled.detail).to.include({ action: 'enrolled', kind: 'passkey' });
    expect(JSON.stringify(enrolled)).not.to.include(key.id);

    const page = await browser.get('/auth/account/passkeys');
    const passkey = /name="id" value="(\d+)"/.exec(page.text)![1]!;
    expect(passkey).to.equal(enrolled.detail.factor);
    const removed = await browser.post('/auth/account/passkeys/remove', { csrf: hiddenFields(page.text).csrf!, id: passkey });
    expect(removed.status).to.equal(303);
    const [gone] = await eventsOf(box, `user=${id}&event=factor`);
    expect(gone.detail).to.include({ action: 'removed', kind: 'passkey', factor: passkey });
  });

  it('a person made at sign-up is in the trail when the page answers', async function () {
    const email = `new-${randomBytes(3).toString('hex')}@example.com`;
    const signedUp = await (await new FormAgent(box).signUpPoster())(email, PASSWORD);
    expect(signedUp.status, signedUp.text.slice(0, 300)).to.be.oneOf([200, 303]);
    const users = await box.json('GET', `/users?email=${encodeURIComponent(email)}`, undefined, await box.rootToken());
    const list = (users.body.entry?.map((e: any) => e.resource) ?? users.body) as { id: number; email: string }[];
    const made = list.find((u) => u.email === email)!;
    const [created] = await eventsOf(box, `resource_type=User&resource_id=${made.id}`);
    expect(created).to.deep.include({ event: 'record_changed', action: 'created' });
    expect(created.actor).to.include({ user: String(made.id) });
  });

  it('a change of a factor whose record cannot be written does not happen: they commit together', async function () {
    const { id, browser } = await person('ned');
    await whileRefusing(box, `event = 'factor' AND subject_user = '${id}'`, async () => {
      const { done } = await confirmApp(browser);
      expect(done.status).to.equal(500);
      expect(done.text).not.to.match(/<li><code>/); // no recovery codes shown: none were made
    });
    expect(await factorsOf(id)).to.deep.equal([]);
    expect(await eventsOf(box, `user=${id}&event=factor`)).to.deep.equal([]);

    const { done } = await confirmApp(browser);
    expect(done.status, done.text).to.equal(200);
    const [app] = await factorsOf(id);
    expect(app).to.include({ kind: 'totp' });
    await whileRefusing(box, `event = 'factor' AND action = 'removed' AND subject_user = '${id}'`, async () => {
      const removed = await browser.post('/auth/account/factors/remove', hiddenFields((await browser.get('/auth/account')).text));
      expect(removed.status).to.equal(500);
    });
    expect((await factorsOf(id)).map((f) => f.id)).to.deep.equal([app.id]);
    expect(await actionsOf(box, id, 'factor')).to.deep.equal(['enrolled', 'recovery-codes-made']);
  });
});

describe('the audit trail of upstream identities: written with the change', function () {
  this.timeout(180_000);
  let a: Box;
  let b: Box;

  before(async function () {
    [a, b] = await startAll([Box.start(), Box.start({ hostname: 'localhost' })]);
    await connectUpstream(a, b, 'corp', { displayName: 'Corp', linking: { trustEmail: true } });
  });
  after(async () => Promise.all([a?.stop(), b?.stop()]));

  /** A person of B with a verified address (and, told so, one of A with the same address). */
  async function upstreamPerson(alsoAtA = false): Promise<{ email: string; atA?: number }> {
    const email = `u-${randomBytes(4).toString('hex')}@example.com`;
    const atB = await b.json('POST', '/users', { email, password: PASSWORD, email_verified: true }, await b.rootToken());
    expect(atB.status, atB.text).to.equal(201);
    if (!alsoAtA) return { email };
    const atA = await a.json('POST', '/users', { email, password: PASSWORD, email_verified: true }, await a.rootToken());
    expect(atA.status, atA.text).to.equal(201);
    return { email, atA: Number(atA.body.id) };
  }

  async function personAtA(email: string): Promise<number> {
    const res = await a.json('GET', `/users?email=${encodeURIComponent(email)}`, undefined, await a.rootToken());
    expect(res.status, res.text).to.equal(200);
    const list = (res.body.entry?.map((e: any) => e.resource) ?? res.body) as { id: number; email: string }[];
    return Number(list.find((u) => u.email === email)!.id);
  }

  it('a person made, and an identity linked then unlinked: each event is in the trail when the page answers', async function () {
    const { email } = await upstreamPerson();
    expect((await new TwoHostBrowser(a, b).signIn('corp', email, PASSWORD)).status).to.equal(303);
    const made = await personAtA(email);
    expect(await actionsOf(a, made, 'upstream')).to.deep.equal(['created']);

    const linkedTo = await upstreamPerson(true);
    expect((await new TwoHostBrowser(a, b).signIn('corp', linkedTo.email, PASSWORD)).status).to.equal(303);
    expect(await actionsOf(a, linkedTo.atA!, 'upstream')).to.deep.equal(['linked']);

    const own = new FormAgent(a);
    expect((await own.signIn(linkedTo.email, PASSWORD)).status).to.equal(303);
    const page = await own.get('/auth/account');
    const unlinked = await own.post('/auth/account/providers/unlink', { csrf: hiddenFields(page.text).csrf!, provider: 'corp' });
    expect(unlinked.status, unlinked.text.slice(0, 200)).to.equal(303);
    expect(await actionsOf(a, linkedTo.atA!, 'upstream')).to.deep.equal(['linked', 'unlinked']);
  });

  it('an identity whose record cannot be written is not linked: they commit together', async function () {
    const { email, atA } = await upstreamPerson(true);
    await whileRefusing(a, `event = 'upstream' AND subject_user = '${atA}'`, async () => {
      const res = await new TwoHostBrowser(a, b).signIn('corp', email, PASSWORD);
      expect(res.status).to.equal(500);
    });
    const identities = await a.json('GET', `/users/${atA}/identities`, undefined, await a.rootToken());
    expect(identities.status, identities.text).to.equal(200);
    expect(JSON.stringify(identities.body)).not.to.include('corp');
    expect(await actionsOf(a, atA!, 'upstream')).to.deep.equal([]);
  });
});
