// Attacks on the audit trail (GET /AuditEvent): a delegated administrator learning of another App's
// events through the cursor a page ends with, a cursor the database cannot read, a stranger
// with curl refused at a gate in a loop, whose refusals would push every other event out of the
// trail; an AuthZEN PEP naming root as its subject to write events in root's name, a client with no
// policy trying to change the box unseen, and a PEP flooding the trail with refusals about made-up
// subjects to push root's change out of it (issue 63); a person pressing "Make new recovery codes" in
// a loop, each a kept change of their own, to push root's change out of it (issue 81).
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { Box, basic, boxForSuite, eventually, type JsonResponse } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { base32Decode, stepAt, totpCode } from '../support/totp.js';
import { pepReadsPeople } from '../support/pep.js';

/** A client with a token for the box's API, and a policy (when `matcho` is given) allowing it just that. */
async function clientWith(box: Box, root: string, id: string, matcho?: object): Promise<string> {
  const { secret } = await box.addClient(id, {}, { policy: false });
  if (matcho) {
    const put = await box.json(
      'PUT',
      `/AccessPolicy/${id}-may`,
      { engine: 'matcho', link: [{ id, resourceType: 'Client' }], matcho },
      root,
    );
    expect(put.status, put.text).to.equal(201);
  }
  const res = await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic(id, secret) });
  expect(res.status, res.text).to.equal(200);
  return res.body.access_token as string;
}

/** A PEP of App `app`: a client allowed only to ask its PDP (AuthZEN evaluations). */
const pepOf = (box: Box, root: string, id: string, app: string): Promise<string> =>
  clientWith(box, root, id, { 'request-method': 'post', uri: `#^/apps/${app}/access/v1/evaluations?$` });

/** A counter of the box's metrics with `labels` (0 when absent). */
const counter = (exposition: string, name: string, labels: string): number =>
  Number(
    exposition
      .split('\n')
      .find((l) => l.startsWith(`${name}{`) && l.includes(labels))
      ?.split(' ')
      .at(-1) ?? 0,
  );

/** One page of the trail as `token` may see it. */
async function pageOf(box: Box, query: string, token: string): Promise<any> {
  const res = await box.json('GET', `/AuditEvent?${query}`, undefined, token);
  expect(res.status, res.text).to.equal(200);
  return res;
}

describe('the audit trail, attacked', function () {
  this.timeout(90_000);
  let box: Box;
  let root: string;

  boxForSuite((b, r) => ([box, root] = [b, r]));

  const page = async (query: string, token: string): Promise<{ ids: string[]; next?: string; last?: string; body: any }> => {
    const res = await box.json('GET', `/AuditEvent?${query}`, undefined, token);
    expect(res.status, res.text).to.equal(200);
    return {
      ids: res.body.entry.map((e: any) => e.resource.resource?.id ?? ''),
      next: res.body.link.find((l: any) => l.relation === 'next')?.url,
      last: res.body.last,
      body: res.body,
    };
  };
  const sql = async (text: string, values: unknown[] = []): Promise<any[]> => {
    const db = new pg.Client({ connectionString: box.databaseUrl });
    await db.connect();
    try {
      return (await db.query(text, values)).rows;
    } finally {
      await db.end();
    }
  };

  /** A token of the wiki's administrator: it may read the trail and the records named wiki…, nothing else. */
  async function wikiAdmin(): Promise<string> {
    const { secret } = await box.addClient('wiki-admin', {}, { policy: false });
    const matcho = {
      'request-method': 'get',
      params: { 'resource/type': { $enum: ['AuditEvent', 'App'] }, 'resource/id': { '$one-of': ['nil?', '#^wiki'] } },
    };
    const put = await box.json(
      'PUT',
      '/AccessPolicy/wiki-admin-reads',
      { engine: 'matcho', link: [{ id: 'wiki-admin', resourceType: 'Client' }], matcho },
      root,
    );
    expect(put.status, put.text).to.equal(201);
    return (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('wiki-admin', secret) })).body
      .access_token as string;
  }

  it("a delegated administrator learns nothing of another App's events from where a page ends", async function () {
    const token = await wikiAdmin();
    await box.json('PUT', '/App/wiki', { urls: ['https://wiki.example'] }, root);
    for (let i = 0; i < 5; i++) await box.json('PUT', '/App/payroll', { urls: [`https://payroll-${i}.example`] }, root);
    const payroll = await page('resource_type=App&resource_id=payroll&_count=1', root);
    expect(payroll.ids).to.deep.equal(['payroll']);

    // Whether payroll changed (and, with since/until, when) was told by the next link and by `last`.
    const asked = await page('resource_type=App&resource_id=payroll&_count=1', token);
    expect(asked.ids).to.deep.equal([]);
    expect(asked.next).to.equal(undefined);
    const followed = await page('resource_type=App&resource_id=payroll&_after=1', token);
    expect(followed.ids).to.deep.equal([]);
    expect(followed.last).to.equal('1');

    // A page is filled with what the reader may see, past the events it may not: the wiki's, behind payroll's.
    const first = await page('_count=1', token);
    expect(first.ids).to.deep.equal(['wiki']);
    expect(first.next).to.be.a('string');
  });

  it('a cursor beyond what an id can be is a 400, and --follow may start from 0 on an empty trail', async function () {
    for (const query of ['_cursor=9999999999999999999', '_after=9223372036854775808']) {
      const res = await box.json('GET', `/AuditEvent?${query}`, undefined, root);
      expect(res.status, `${query}: ${res.text}`).to.equal(400);
    }
    expect((await box.json('GET', '/AuditEvent?_after=9223372036854775807', undefined, root)).status).to.equal(200);
    expect((await box.json('GET', '/AuditEvent?_after=0&event=nothing-such', undefined, root)).body.last).to.equal('0');
  });

  it('an AuthZEN PEP that names root or a person as its subject writes events in its own name, about them', async function () {
    expect((await box.json('PUT', '/App/spoofed', { urls: ['https://spoofed.example'] }, root)).status).to.equal(201);
    const pep = await pepOf(box, root, 'spoofer', 'spoofed');
    // It may name the person (it may read them: api/decision/engine.ts namedCaller), not act as them.
    await pepReadsPeople(box, root, 'spoofer');
    const person = (await box.json('POST', '/users', { email: 'spoofed@example.com', password: 'spoofed-password-1' }, root)).body;
    for (const subject of [
      { type: 'client', id: 'root' },
      { type: 'user', id: String(person.id) },
    ]) {
      const res = await box.json(
        'POST',
        '/apps/spoofed/access/v1/evaluation',
        { subject, action: { name: 'delete' }, resource: { type: 'x', id: '1' } },
        pep,
      );
      expect(res.status, res.text).to.equal(200);
      expect(res.body.decision).to.equal(false);
      const id = res.headers.get('x-boxauth-decision')!;
      const [event] = await eventually(`the refusal about ${subject.type} ${subject.id} in the trail`, async () => {
        const found = await page(`resource_type=Decision&resource_id=${id}`, root);
        return found.body.entry.length > 0 && found.body.entry.map((e: any) => e.resource);
      });
      // Who called is the PEP, with its own token's session; whom it asked about is the subject, apart.
      expect(event.actor.client).to.equal('spoofer');
      expect(event.actor.user).to.equal(null);
      expect(event.actor.session).to.be.a('string');
      expect(event.subject).to.deep.equal(subject.type === 'client' ? { client: 'root', user: null } : { client: null, user: subject.id });
      expect(event.detail.by.client).to.equal('spoofer');
    }
    // Nothing in the trail says root or the person did anything at the spoofed App.
    const asRoot = (await page('actor=root&resource_type=Decision&_count=1000', root)).body.entry;
    expect(asRoot.filter((e: any) => e.resource.detail.app === 'spoofed')).to.deep.equal([]);
    const asPerson = (await page(`actor=${person.id}&_count=1000`, root)).body.entry;
    expect(asPerson.filter((e: any) => e.resource.event === 'decision')).to.deep.equal([]);
  });

  it('a refused write to the box leaves an event naming the caller, the method and the path, and a log line', async function () {
    const intruder = await clientWith(box, root, 'intruder');
    const tries: [string, string, unknown][] = [
      ['PUT', '/AccessPolicy/backdoor', { engine: 'allow', link: [{ id: 'intruder', resourceType: 'Client' }] }],
      ['POST', '/users', { email: 'sneaked@example.com', password: 'sneaked-password-1' }],
      ['DELETE', '/AccessPolicy/admins-allow', undefined],
    ];
    for (const [method, path, body] of tries)
      expect((await box.json(method, path, body, intruder)).status, `${method} ${path}`).to.equal(403);
    const refused = await eventually('the three refused writes in the trail', async () => {
      const found = (await page('event=api_refused&actor=intruder&_count=100', root)).body.entry.map((e: any) => e.resource);
      return found.length >= 3 && found;
    });
    expect(refused.map((e: any) => `${e.detail.method} ${e.detail.path}`).reverse()).to.deep.equal(tries.map(([m, p]) => `${m} ${p}`));
    for (const e of refused) {
      expect(e).to.deep.include({ outcome: 'failure', action: 'write' });
      expect(e.actor.client).to.equal('intruder');
      expect(e.detail.reason).to.match(/no AccessPolicy allows/);
    }
    expect(refused.find((e: any) => e.detail.path === '/AccessPolicy/backdoor').resource).to.deep.equal({
      type: 'AccessPolicy',
      id: 'backdoor',
    });
    // Nothing was changed, and the log stream names each attempt too.
    expect((await box.json('GET', '/AccessPolicy/backdoor', undefined, root)).status).to.equal(404);
    for (const [method, path] of tries)
      expect(
        box.logs.some(
          (l) =>
            l.includes('"audit":true') &&
            l.includes('"api_refused"') &&
            l.includes(`"method":"${method}"`) &&
            l.includes(`"path":"${path}"`),
        ),
        `${method} ${path} logged`,
      ).to.equal(true);
  });

  it("a stranger refused at a gate in a loop writes nothing to the trail; a caller's refusals kept are", async function () {
    const audience = 'https://gated.example';
    expect((await box.json('PUT', '/App/gated', { urls: [box.url], audience }, root)).status).to.equal(201);
    const gate = (headers: Record<string, string> = {}) =>
      box.request('GET', '/authz/forward-auth/gated', {
        headers: { 'X-Forwarded-Method': 'GET', 'X-Forwarded-Host': new URL(box.url).host, 'X-Forwarded-Uri': '/x', ...headers },
      });
    const strangers = await Promise.all(Array.from({ length: 60 }, () => gate()));
    expect(strangers.every((r) => r.status === 401 || r.status === 403 || r.status === 302)).to.equal(true);
    // Then one identified caller, refused and kept: the trail's writer keeps its events in order.
    await box.addClient('gated-caller', { audience: [audience] }, { secret: 'gated-caller-secret', policy: false });
    const token = (
      await box.form(
        '/auth/token',
        { grant_type: 'client_credentials', audience },
        { Authorization: basic('gated-caller', 'gated-caller-secret') },
      )
    ).body.access_token as string;
    const refused = await gate({ Authorization: `Bearer ${token}` });
    expect(refused.status).to.equal(403);
    const id = refused.headers.get('x-boxauth-decision')!;
    await eventually(
      'the caller’s refusal in the trail',
      // (eventually returns any value but undefined and false: a count of 0 would end the wait)
      async () => (await page(`resource_type=Decision&resource_id=${id}`, root)).ids.length > 0,
    );
    const decisions = await sql("SELECT detail FROM audit_events WHERE event = 'decision' AND detail->>'app' = 'gated'");
    expect(decisions.map((d) => d.detail.id)).to.deep.equal([id]);
  });
});

describe('the audit trail, flooded with refusals about made-up subjects', function () {
  this.timeout(120_000);
  let box: Box;
  let root: string;

  // A small cap, as the 600, purged every second; a clock the test moves to end a minute.
  boxForSuite((b, r) => ([box, root] = [b, r]), {
    env: { BOXAUTH_AUDIT_MAX_ROWS: '40', BOXAUTH_PURGE_INTERVAL_SECONDS: '1' },
    movableClock: true,
  });
  const page = (query: string, token: string): Promise<any> => pageOf(box, query, token);

  it("keeps root's change, and at most a bound a minute of one caller's refusals, the rest counted once", async function () {
    const policy = {
      engine: 'matcho',
      description: 'changed by root',
      matcho: { 'request-method': 'get' },
      link: [{ id: 'nobody', resourceType: 'Client' }],
    };
    expect((await box.json('PUT', '/AccessPolicy/roots-change', policy, root)).status).to.equal(201);
    expect((await box.json('PUT', '/App/flooded', { urls: ['https://flooded.example'] }, root)).status).to.equal(201);
    const pep = await pepOf(box, root, 'flooder', 'flooded');

    // The flood runs within one minute of the box's clock (the bound is per minute): a summary written
    // mid-flood, at a minute's end, would be an event the purge may take like any other refusal.
    box.advanceClock(61 - Math.floor((Date.now() / 1000) % 60));
    // Batches of 100 refused evaluations, each about a client nobody registered, until the caller's
    // bound a minute is met. The decision record keeps a share a second of its own first (5 of one
    // caller), so the bound of 60 takes more than 12 seconds, however fast the batches go: the flood
    // is bounded by time, and stays within the minute the clock was moved to.
    let n = 0;
    const floodEnds = Date.now() + 45_000;
    for (
      let batch = 0;
      Date.now() < floodEnds && (batch < 12 || counter(await box.metrics(), 'boxauth_audit_events_not_kept_total', 'why="caller"') === 0);
      batch++
    ) {
      const evaluations = Array.from({ length: 100 }, () => ({ subject: { type: 'client', id: `made-up-${n++}` } }));
      const res = await box.json(
        'POST',
        '/apps/flooded/access/v1/evaluations',
        { action: { name: 'get' }, resource: { type: 'x', id: '1' }, evaluations },
        pep,
      );
      expect(res.status, res.text).to.equal(200);
    }
    // The purge ran over the flood: the trail is back under its cap…
    await eventually('the trail capped', async () => {
      const m = await box.metrics();
      return (
        counter(m, 'boxauth_audit_events_not_kept_total', 'why="cap"') > 0 && (await page('_count=1000', root)).body.entry.length <= 40
      );
    });
    // … and root's change is still in it.
    const changes = (await page('resource_type=AccessPolicy&resource_id=roots-change', root)).body.entry;
    expect(changes.map((e: any) => e.resource.actor.client)).to.deep.equal(['root']);

    // The flooder's refusals beyond its bound a minute were left out, counted; once the minute ends, one event says how many.
    const leftOut = counter(await box.metrics(), 'boxauth_audit_events_not_kept_total', 'why="caller"');
    expect(leftOut).to.be.above(0);
    box.advanceClock(61);
    await box.json(
      'POST',
      '/apps/flooded/access/v1/evaluation',
      { subject: { type: 'client', id: 'made-up-last' }, action: { name: 'get' }, resource: { type: 'x', id: '1' } },
      pep,
    );
    const summaries = await eventually('the left_out events', async () => {
      const found = (await page('event=left_out&actor=flooder', root)).body.entry.map((e: any) => e.resource);
      const counted = found.reduce((sum: number, e: any) => sum + (e.detail.events.decision as number), 0);
      return counted === leftOut && found;
    });
    for (const e of summaries) expect(e.actor.client).to.equal('flooder');
  });
});

describe("the audit trail, flooded with a person's own changes", function () {
  this.timeout(120_000);
  let box: Box;
  let root: string;

  // A cap the person's own changes pass many times over, purged every second.
  boxForSuite((b, r) => ([box, root] = [b, r]), { env: { BOXAUTH_AUDIT_MAX_ROWS: '6', BOXAUTH_PURGE_INTERVAL_SECONDS: '1' } });

  /** A person with a password and an authenticator app, signed in just now on the account page. */
  async function personWithApp(name: string): Promise<FormAgent> {
    const email = `${name}-${randomBytes(3).toString('hex')}@example.com`;
    const made = await box.json('POST', '/users', { email, password: 'a-good-password-1' }, root);
    expect(made.status, made.text).to.equal(201);
    const browser = new FormAgent(box);
    expect((await browser.signIn(email, 'a-good-password-1', '/auth/account')).status).to.equal(303);
    const setup = await browser.post('/auth/account/totp', hiddenFields((await browser.get('/auth/account')).text));
    const secret = base32Decode(/id="totp-secret">([A-Z2-7]+)</.exec(setup.text)![1]!);
    const done = await browser.post('/auth/account/totp/confirm', {
      ...hiddenFields(setup.text),
      code: totpCode(secret, stepAt(Date.now())),
    });
    expect(done.status, done.text).to.equal(200);
    return browser;
  }

  /** "Make new recovery codes", pressed `times` at once. */
  async function press(browser: FormAgent, times: number): Promise<JsonResponse[]> {
    const csrf = hiddenFields((await browser.get('/auth/account')).text).csrf!;
    return Promise.all(Array.from({ length: times }, () => browser.post('/auth/account/recovery-codes', { csrf })));
  }

  it("keeps root's change however many changes of their own people make", async function () {
    const policy = { engine: 'matcho', matcho: { 'request-method': 'get' }, link: [{ id: 'nobody', resourceType: 'Client' }] };
    expect((await box.json('PUT', '/AccessPolicy/roots-change', policy, root)).status).to.equal(201);
    // Two people, each as many codes as the throttle lets them: far more of their changes than the cap.
    for (const name of ['pia', 'pit']) {
      const browser = await personWithApp(name);
      for (let i = 0; i < 10; i++) expect((await press(browser, 1))[0]!.status).to.equal(200);
    }
    await eventually('the trail capped', async () => (await pageOf(box, '_count=1000', root)).body.entry.length <= 6);
    const changes = (await pageOf(box, 'resource_type=AccessPolicy&resource_id=roots-change', root)).body.entry;
    expect(changes.map((e: any) => e.resource.actor.client)).to.deep.equal(['root']);
  });

  it('"Make new recovery codes" pressed at once, 25 times: 10 an hour are made, the rest are a 429 the person reads', async function () {
    const browser = await personWithApp('poe');
    const answers = await press(browser, 25);
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 200)).to.have.length(10);
    expect(statuses.filter((s) => s === 429)).to.have.length(15);
    expect(answers.find((a) => a.status === 429)!.text).to.match(
      /You made new recovery codes 10 times recently\. Try again in (60|59) minutes\./,
    );
    // Another person is not held by this one's throttle.
    expect((await press(await personWithApp('pam'), 1))[0]!.status).to.equal(200);
  });
});
