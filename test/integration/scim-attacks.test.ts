// Attacks on the SCIM door (RFC 7644) beyond test/integration/scim.test.ts: callers it must
// refuse (a client whose policy is for other paths, a person's own token), filter values that
// PostgreSQL refuses (which must be the filter's 400, never a 500), and a person turned off by
// their directory who asks for a password reset (no link: a password set while turned off would
// be a way in waiting for the day the directory turns them on again).
import { expect } from 'chai';
import pg from 'pg';
import { Box, basic, eventually } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { restIdOf } from '../support/scim.js';
import { TestSmtp } from '../support/smtp.js';
import { base32Decode, stepAt, totpCode } from '../support/totp.js';
import { userToken } from '../support/user-token.js';

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const SEARCH = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';
const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
const PASSWORD = 'a-good-password-1';

describe('SCIM: attacks on the door', function () {
  this.timeout(180_000);
  let smtp: TestSmtp;
  let box: Box;
  let root: string;

  before(async function () {
    smtp = await TestSmtp.start();
    box = await Box.start({ env: smtp.boxEnv() });
    root = await box.rootToken();
  });
  after(async function () {
    await box?.stop();
    await smtp?.stop();
  });

  function scim(method: string, path: string, body?: unknown, bearer = root) {
    return box.request(method, `/scim/v2${path}`, {
      headers: { Authorization: `Bearer ${bearer}`, ...(body !== undefined ? { 'Content-Type': 'application/scim+json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  }
  const expectScimError = (res: { status: number; text: string }, status: number, scimType?: string): void => {
    expect(res.status, res.text).to.equal(status);
    const error = JSON.parse(res.text);
    expect(error.schemas).to.deep.equal([ERROR]);
    expect(error.status).to.equal(String(status));
    if (scimType) expect(error.scimType).to.equal(scimType);
  };
  const restId = (email: string): Promise<number> => restIdOf(box, root, email);
  const newUser = async (userName: string): Promise<string> => {
    const res = await scim('POST', '/Users', { schemas: [USER], userName, password: PASSWORD });
    expect(res.status, res.text).to.equal(201);
    return JSON.parse(res.text).id;
  };

  it('lets in only a caller a policy allows the SCIM paths: not a person’s own token, not a client allowed only GET /users', async function () {
    const plain = await newUser('plain@example.com');
    await box.addClient('actor', {
      grant_types: ['authorization_code'],
      auth: { authorization_code: { redirect_uri: 'https://app.example/cb' } },
    });
    // The client may do everything; the person's side has no policy: their token may not provision.
    const personsToken = await userToken(box, await restId('plain@example.com'), 'actor');
    expectScimError(await scim('GET', '/Users', undefined, personsToken), 403);
    expectScimError(
      await scim('PATCH', `/Users/1`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'active', value: false }] }, personsToken),
      403,
    );
    // The box's administrators (its admins group) may, through a client that may act for its users.
    expect((await scim('GET', '/Users', undefined, await userToken(box, 1, 'actor'))).status).to.equal(200);

    const reader = await box.addClient('reader', {}, { policy: false });
    const policy = await box.json(
      'PUT',
      '/AccessPolicy/reader',
      { engine: 'matcho', link: [{ id: 'reader', resourceType: 'Client' }], matcho: { 'request-method': 'get', uri: '#^/users' } },
      root,
    );
    expect(policy.status, policy.text).to.be.oneOf([200, 201]);
    const token = (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic(reader.id, reader.secret) }))
      .body.access_token;
    expect((await box.json('GET', '/users', undefined, token)).status).to.equal(200);
    expectScimError(await scim('GET', '/Users', undefined, token), 403);
    expectScimError(await scim('GET', `/Users/${plain}`, undefined, token), 403);
    expect(JSON.parse((await scim('GET', `/Users/${plain}`)).text).active).to.equal(true);
  });

  it('a group named like another group’s id does not take that group’s policies', async function () {
    const ops = await box.json('POST', '/groups', { name: 'ops' }, root);
    const linked = await box.json(
      'PUT',
      '/AccessPolicy/ops-by-id',
      { engine: 'allow', link: [{ id: String(ops.body.id), resourceType: 'Group' }] },
      root,
    );
    expect(linked.status, linked.text).to.be.oneOf([200, 201]);
    const person = await newUser('impostor@example.com');
    await box.addClient('impostor-app', {
      grant_types: ['authorization_code'],
      auth: { authorization_code: { redirect_uri: 'https://app.example/cb' } },
    });
    const personId = await restId('impostor@example.com');
    const token = async (): Promise<string> => userToken(box, personId, 'impostor-app');
    expect((await box.json('GET', '/Client', undefined, await token())).status).to.equal(403);
    const named = await scim('POST', '/Groups', { schemas: [GROUP], displayName: String(ops.body.id), members: [{ value: person }] });
    expect(named.status, named.text).to.equal(201);
    expect((await box.json('GET', '/Client', undefined, await token())).status).to.equal(403);
    // A member of the group itself is let in: the link still names group ${ops.body.id}.
    await box.json('PUT', `/users/${personId}`, { 'group-ids': [ops.body.id] }, root);
    expect((await box.json('GET', '/Client', undefined, await token())).status).to.equal(200);
  });

  it('answers a filter value PostgreSQL would refuse (a NUL, a year past 9999 or before 1) with 400 invalidFilter, not 500', async function () {
    for (const filter of [
      'userName eq "\\u0000"',
      'externalId eq "a\\u0000b"',
      'name.givenName co "\\u0000"',
      'emails[value eq "x\\u0000"]',
      'meta.created gt "+275760-09-13T00:00:00Z"',
      'meta.lastModified lt "-000001-01-01T00:00:00Z"',
      'meta.created gt "0000-06-01T00:00:00Z"',
      'meta.created gt 275760',
    ]) {
      expectScimError(await scim('GET', `/Users?filter=${encodeURIComponent(filter)}`), 400, 'invalidFilter');
    }
    expectScimError(await scim('GET', `/Groups?filter=${encodeURIComponent('displayName sw "\\u0000"')}`), 400, 'invalidFilter');
    expectScimError(await scim('POST', '/Groups/.search', { schemas: [SEARCH], filter: 'externalId eq "\\u0000"' }), 400, 'invalidFilter');
    // The years RFC 3339 has still search.
    const edge = await scim(
      'GET',
      `/Users?filter=${encodeURIComponent('meta.created gt "0001-01-01T00:00:00Z" and meta.created lt "9999-12-31T23:59:59Z"')}`,
    );
    expect(edge.status, edge.text).to.equal(200);
    expect(JSON.parse(edge.text).totalResults).to.be.greaterThan(0);
  });

  it('a person turned off is mailed no reset link, and one mailed before is void: no password set while off waits for them', async function () {
    const db = new pg.Client({ connectionString: box.databaseUrl });
    await db.connect();
    try {
      const off = 'turned-off@example.com';
      const id = await newUser(off);
      const askReset = async (email: string): Promise<void> => {
        const browser = new FormAgent(box);
        const page = await browser.get('/auth/reset');
        expect((await browser.post('/auth/reset', { ...hiddenFields(page.text), email })).text).to.include('Check your mail');
      };
      const outboxEmpty = async (): Promise<boolean> => (await db.query('SELECT 1 FROM mail_outbox')).rowCount === 0;

      // A link mailed while they were on, followed once they are off: void.
      await askReset(off);
      const mail = await smtp.waitForMail((m) => m.to.includes(off));
      const link = /https?:\/\/\S+(\/auth\/reset\/confirm\?token=[\w-]+)/.exec(mail.parsed.text ?? '')![1]!;
      const turnedOff = await scim('PATCH', `/Users/${id}`, {
        schemas: [PATCH],
        Operations: [{ op: 'replace', path: 'active', value: false }],
      });
      expect(turnedOff.status, turnedOff.text).to.equal(200);
      const browser = new FormAgent(box);
      const page = await browser.get(link);
      if (page.status === 200) {
        const set = await browser.post('/auth/reset/confirm', { ...hiddenFields(page.text), password: 'a-password-set-while-off' });
        expect(set.status, 'the link set a password while the person was turned off').to.equal(400);
      }

      // Asked while off: the outbox sends nothing, and no link waits in the database.
      await askReset(off);
      await eventually('the outbox has sent what it would', outboxEmpty);
      expect(smtp.mailsTo(off)).to.have.length(1);
      const links = await db.query("SELECT 1 FROM account_links WHERE user_id = $1 AND purpose = 'reset'", [await restId(off)]);
      expect(links.rowCount).to.equal(0);

      // Turned on again, they sign in with the password they had, not one set while off.
      await scim('PATCH', `/Users/${id}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'active', value: true }] });
      expect((await new FormAgent(box).signIn(off, 'a-password-set-while-off')).status).to.not.equal(303);
      expect((await new FormAgent(box).signIn(off, PASSWORD)).status).to.equal(303);
    } finally {
      await db.end();
    }
  });

  it('deactivation racing 12 code exchanges and a PUT without active: no token obtained outlives it, and a PUT turns the person on', async function () {
    const REDIRECT = 'https://app.example/cb';
    await box.addClient(
      'racing-app',
      {
        grant_types: ['authorization_code'],
        first_party: true,
        auth: { authorization_code: { redirect_uri: REDIRECT, refresh_token: true } },
      },
      { secret: 'racing-secret-1', policy: false },
    );
    const authorize = `/auth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'racing-app', redirect_uri: REDIRECT })}`;
    const exchange = (code: string) =>
      box.form(
        '/auth/token',
        { grant_type: 'authorization_code', code, redirect_uri: REDIRECT },
        { Authorization: basic('racing-app', 'racing-secret-1') },
      );
    const introspect = async (token: string): Promise<boolean> =>
      (await box.form('/auth/introspect', { token }, { Authorization: basic('racing-app', 'racing-secret-1') })).body.active;
    const email = 'code-racer@example.com';
    const id = await newUser(email);
    const codes: string[] = [];
    for (let i = 0; i < 12; i++) {
      const browser = new FormAgent(box);
      expect((await browser.signIn(email, PASSWORD)).status).to.equal(303);
      codes.push(new URL((await browser.get(authorize)).headers.get('location')!).searchParams.get('code')!);
    }
    // The turning off goes once one exchange has won: the others race it.
    const racing = codes.map(exchange);
    await Promise.race(racing);
    const off = await scim('PATCH', `/Users/${id}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'active', value: false }] });
    expect(off.status, off.text).to.equal(200);
    const exchanged = await Promise.all(racing);
    for (const r of exchanged.filter((x) => x.status === 200)) {
      expect(await introspect(r.body.access_token)).to.equal(false);
      const refreshed = await box.form(
        '/auth/token',
        { grant_type: 'refresh_token', refresh_token: r.body.refresh_token },
        { Authorization: basic('racing-app', 'racing-secret-1') },
      );
      expect(refreshed.body.error).to.equal('invalid_grant');
    }
    // RFC 7644 §3.5.1: a PUT replaces the whole person; one without "active" leaves it unassigned, read as on.
    const put = await scim('PUT', `/Users/${id}`, { schemas: [USER], userName: email });
    expect(JSON.parse(put.text).active).to.equal(true);
  });

  it('bounds what is kept of one person: PATCHes that would grow it past 64 KiB are 400 and change nothing, so a page of 200 stays small', async function () {
    const id = await newUser('hoarder@example.com');
    // Each PATCH within the body's limits adds addresses of long strings; a person's kept attributes
    // were bounded per string and per list only: some 3 MB each, 600 MB in one page of 200.
    const address = (n: number) =>
      Object.fromEntries(
        ['formatted', 'streetAddress', 'locality', 'region', 'postalCode', 'country'].map((k) => [k, `${n}${k}`.padEnd(2048, 'x')]),
      );
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) {
      const res = await scim('PATCH', `/Users/${id}`, {
        schemas: [PATCH],
        Operations: [{ op: 'add', path: 'addresses', value: Array.from({ length: 12 }, (_, j) => address(i * 12 + j)) }],
      });
      statuses.push(res.status);
      if (res.status !== 200) expectScimError(res, 400, 'invalidValue');
    }
    expect(statuses).to.include(400);
    const kept = await scim('GET', `/Users/${id}`);
    expect(kept.status).to.equal(200);
    expect(kept.text.length).to.be.below(70 * 1024);
    // A person's ordinary attributes still fit many times over.
    const ordinary = await scim('PUT', `/Users/${id}`, {
      schemas: [USER],
      userName: 'hoarder@example.com',
      name: { givenName: 'Hoa', familyName: 'Rder' },
      emails: [{ value: 'hoarder@example.com', type: 'work', primary: true }],
      addresses: [address(1)],
    });
    expect(ordinary.status, ordinary.text).to.equal(200);
  });

  it('a sign-in caught between its steps when the person is turned off goes no further: neither the factor nor Continue signs in', async function () {
    const group = await box.json('POST', '/groups', { name: 'needs-factor', require_second_factor: true }, root);
    expect(group.status, group.text).to.equal(201);
    const secretOf = (text: string): Buffer => base32Decode(/id="totp-secret">([A-Z2-7]+)</.exec(text)![1]!);
    const location = (res: { headers: Headers }): string => res.headers.get('location')!;
    const turn = (id: string, active: boolean) =>
      scim('PATCH', `/Users/${id}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'active', value: active }] });
    const signedIn = async (browser: FormAgent): Promise<boolean> =>
      (await browser.get('/auth/signed-in')).text.includes('You are signed in as');

    // Turned off on the enrolment page: the code is refused.
    const a = await newUser('stepper-a@example.com');
    const b = await newUser('stepper-b@example.com');
    const members = await scim('PATCH', `/Groups/${group.body.id}`, {
      schemas: [PATCH],
      Operations: [{ op: 'add', path: 'members', value: [{ value: a }, { value: b }] }],
    });
    expect(members.status, members.text).to.equal(200);
    const first = new FormAgent(box);
    const afterPassword = await first.signIn('stepper-a@example.com', PASSWORD);
    expect(location(afterPassword)).to.match(/^\/auth\/sign-in\/enrol/);
    const enrol = await first.get(location(afterPassword));
    expect((await turn(a, false)).status).to.equal(200);
    const code = await first.post('/auth/sign-in/enrol', {
      ...hiddenFields(enrol.text),
      code: totpCode(secretOf(enrol.text), stepAt(Date.now())),
    });
    expect(code.status, code.text).to.not.equal(200);
    expect(await signedIn(first)).to.equal(false);

    // Turned off on the recovery codes' page, the factor proven: Continue is refused.
    const second = new FormAgent(box);
    const enrolB = await second.get(location(await second.signIn('stepper-b@example.com', PASSWORD)));
    const codes = await second.post('/auth/sign-in/enrol', {
      ...hiddenFields(enrolB.text),
      code: totpCode(secretOf(enrolB.text), stepAt(Date.now())),
    });
    expect(codes.status, codes.text).to.equal(200);
    expect((await turn(b, false)).status).to.equal(200);
    const onward = await second.post('/auth/sign-in/continue', hiddenFields(codes.text));
    expect(onward.status).to.not.equal(303);
    expect(await signedIn(second)).to.equal(false);
    // Turned on again, the step is still gone: a new sign-in, not the old step, is the way in.
    expect((await turn(b, true)).status).to.equal(200);
    expect((await second.post('/auth/sign-in/continue', hiddenFields(codes.text))).status).to.not.equal(303);
    expect(await signedIn(second)).to.equal(false);
  });
});
