// The SCIM door (RFC 7644) as a directory and an attacker use it: the same people and groups as
// the REST API, deprovisioning that ends everything on every process, and the attacks the issue
// names — no policy, a person kept signed in after active=false, filters that inject or cost, a
// PATCH of id, meta or a password hash, a member from another box — each refused, changing nothing.
import { expect } from 'chai';
import pg from 'pg';
import { Box, basic, eventually } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { restIdOf } from '../support/scim.js';

const DEVICE = 'urn:ietf:params:oauth:grant-type:device_code';
const REDIRECT = 'https://app.example/cb';
const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';

const withinASecond = (what: string, check: () => Promise<boolean>): Promise<boolean> => eventually(what, check, 1000, 20);

describe('SCIM: a directory provisions the box’s people and groups', function () {
  let box: Box;
  let other: Box;
  let root: string;
  let directory: string;

  const token = async (b: Box, id: string, secret: string): Promise<string> =>
    (await b.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic(id, secret) })).body.access_token;

  before(async function () {
    box = await Box.start();
    other = await box.startAnother();
    root = await box.rootToken();
    const dir = await box.addClient('directory', {});
    directory = await token(box, dir.id, dir.secret);
    await box.addClient(
      'app',
      {
        grant_types: ['authorization_code', DEVICE],
        first_party: true,
        auth: { authorization_code: { redirect_uri: REDIRECT, refresh_token: true }, device_code: { refresh_token: true } },
      },
      { secret: 'app-secret-123', policy: false },
    );
  });
  after(async function () {
    await other?.stop();
    await box?.stop();
  });

  function scim(method: string, path: string, body?: unknown, bearer = directory, headers: Record<string, string> = {}, on = box) {
    return on.request(method, `/scim/v2${path}`, {
      headers: {
        ...(bearer ? { Authorization: `Bearer ${bearer}` } : {}),
        ...(body !== undefined ? { 'Content-Type': 'application/scim+json' } : {}),
        ...headers,
      },
      ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
    });
  }
  const patch = (path: string, ...operations: unknown[]) => scim('PATCH', path, { schemas: [PATCH], Operations: operations });
  const search = (kind: 'Users' | 'Groups', filter: string) => scim('GET', `/${kind}?filter=${encodeURIComponent(filter)}`);
  const newUser = async (userName: string, more: Record<string, unknown> = {}): Promise<{ id: string } & Record<string, unknown>> => {
    const res = await scim('POST', '/Users', { schemas: [USER], userName, ...more });
    expect(res.status, res.text).to.equal(201);
    return JSON.parse(res.text);
  };
  const body = (res: { text: string }) => JSON.parse(res.text);
  const restId = (email: string): Promise<number> => restIdOf(box, root, email);
  const expectScimError = (res: { status: number; text: string }, status: number, scimType?: string): void => {
    expect(res.status, res.text).to.equal(status);
    const error = body(res);
    expect(error.schemas).to.deep.equal([ERROR]);
    expect(error.status).to.equal(String(status));
    if (scimType) expect(error.scimType).to.equal(scimType);
    expect(error.detail).to.be.a('string');
  };

  const authorizePath = `/auth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'app', redirect_uri: REDIRECT })}`;
  const exchange = (code: string) =>
    box.form(
      '/auth/token',
      { grant_type: 'authorization_code', code, redirect_uri: REDIRECT },
      { Authorization: basic('app', 'app-secret-123') },
    );
  const refresh = (refreshToken: string) =>
    box.form('/auth/token', { grant_type: 'refresh_token', client_id: 'app', refresh_token: refreshToken });
  const introspect = async (accessToken: string, on = box): Promise<boolean> =>
    (await on.form('/auth/introspect', { token: accessToken }, { Authorization: basic('app', 'app-secret-123') })).body.active;

  async function signedIn(userName: string, password: string): Promise<FormAgent> {
    const browser = new FormAgent(box);
    const res = await browser.signIn(userName, password);
    expect(res.status, res.text).to.equal(303);
    return browser;
  }
  async function pendingCode(browser: FormAgent): Promise<string> {
    const res = await browser.get(authorizePath);
    expect(res.status, res.text).to.equal(302);
    return new URL(res.headers.get('location')!).searchParams.get('code')!;
  }
  async function allowedDeviceCode(browser: FormAgent): Promise<string> {
    const asked = (await box.form('/auth/device', { client_id: 'app' }, { Authorization: basic('app', 'app-secret-123') })).body;
    const page = await browser.get(`/auth/device/verify?user_code=${asked.user_code}`);
    const allowed = await browser.post('/auth/device/verify', { ...hiddenFields(page.text), decision: 'allow' });
    expect(allowed.text).to.include('Device connected');
    return asked.device_code;
  }

  it('refuses a stranger and a client no policy allows, with the RFC’s error body, and changes nothing', async function () {
    expectScimError(await scim('GET', '/Users', undefined, ''), 401);
    const noPolicy = await box.addClient('no-policy', {}, { policy: false });
    const stranger = await token(box, noPolicy.id, noPolicy.secret);
    expectScimError(await scim('GET', '/Users', undefined, stranger), 403);
    expectScimError(await scim('POST', '/Users', { schemas: [USER], userName: 'sneak@example.com' }, stranger), 403);
    const off = await scim(
      'PATCH',
      '/Users/1',
      { schemas: [PATCH], Operations: [{ op: 'replace', path: 'active', value: false }] },
      stranger,
    );
    expectScimError(off, 403);
    expect((await box.json('GET', '/users/1', undefined, root)).body.active).to.equal(true);
    const listed = await box.json('GET', '/users?email=sneak@example.com', undefined, root);
    expect(listed.body).to.deep.equal([]);
  });

  it('a policy on resource/type "scim", as the guide writes it, opens the SCIM door and nothing else', async function () {
    const scoped = await box.addClient('scim-only', {}, { policy: false });
    const policy = await box.json(
      'PUT',
      '/AccessPolicy/scim-only',
      { engine: 'matcho', link: [{ id: 'scim-only', resourceType: 'Client' }], matcho: { params: { 'resource/type': 'scim' } } },
      root,
    );
    expect(policy.status, policy.text).to.be.oneOf([200, 201]);
    const bearer = await token(box, scoped.id, scoped.secret);
    expect((await scim('GET', '/Users?count=1', undefined, bearer)).status).to.equal(200);
    expect((await box.json('GET', '/users', undefined, bearer)).status).to.equal(403);
    expect((await box.json('GET', '/Client', undefined, bearer)).status).to.equal(403);
  });

  it('serves the discovery documents as application/scim+json', async function () {
    const config = await scim('GET', '/ServiceProviderConfig');
    expect(config.status).to.equal(200);
    expect(config.headers.get('content-type')).to.match(/^application\/scim\+json/);
    expect(body(config)).to.include.keys('patch', 'filter', 'etag', 'bulk', 'sort', 'authenticationSchemes');
    expect(body(config).filter).to.deep.equal({ supported: true, maxResults: 200 });
    // Its documentationUri is the box's own copy of the SCIM guide, served read-only as Markdown.
    expect(body(config).documentationUri).to.equal(`${box.url}/docs/guides/scim.md`);
    const guide = await fetch(body(config).documentationUri);
    expect(guide.status).to.equal(200);
    expect(guide.headers.get('content-type')).to.match(/^text\/markdown; charset=utf-8/i);
    expect(guide.headers.get('x-content-type-options')).to.equal('nosniff');
    expect(await guide.text()).to.match(/^# /);
    // Nothing but docs/ is served there: no folder listing, no climbing out, no dotfiles.
    expect((await fetch(`${box.url}/docs/guides/`)).status).to.equal(404);
    expect((await fetch(`${box.url}/docs/..%2fpackage.json`)).status).to.be.oneOf([400, 403, 404]);
    expect((await fetch(`${box.url}/docs/.hidden`)).status).to.equal(404);
    const types = body(await scim('GET', '/ResourceTypes'));
    expect(types.Resources.map((t: { id: string }) => t.id)).to.deep.equal(['User', 'Group']);
    const schemas = body(await scim('GET', '/Schemas'));
    expect(schemas.Resources.map((s: { id: string }) => s.id)).to.include.members([USER, GROUP]);
    expectScimError(await scim('GET', '/Nope'), 404);
  });

  it('is a door onto the REST API’s people: what one writes the other reads at once', async function () {
    const made = await newUser('rita@example.com', { externalId: 'entra-1', name: { givenName: 'Rita', familyName: 'Ng' } });
    const rita = await restId('rita@example.com');
    const rest = await box.json('GET', `/users/${rita}`, undefined, root);
    expect(rest.body).to.include({ email: 'rita@example.com', email_verified: true, active: true });
    const group = await box.json('POST', '/groups', { name: 'rest-made' }, root);
    // A new address the administrator vouches for: one nobody proved would hide the person from the directory.
    await box.json('PUT', `/users/${rita}`, { email: 'rita.ng@example.com', email_verified: true, 'group-ids': [group.body.id] }, root);
    const read = await scim('GET', `/Users/${made.id}`);
    const user = body(read);
    expect(user).to.include({ userName: 'rita.ng@example.com', externalId: 'entra-1', active: true });
    expect(user.name).to.deep.equal({ givenName: 'Rita', familyName: 'Ng' });
    expect(user.groups).to.deep.include({
      value: String(group.body.id),
      display: 'rest-made',
      $ref: `${box.url}/scim/v2/Groups/${group.body.id}`,
      type: 'direct',
    });
    expect(read.headers.get('etag')).to.equal(user.meta.version);
    const members = body(await scim('GET', `/Groups/${group.body.id}`)).members;
    expect(members).to.deep.equal([{ value: made.id, $ref: `${box.url}/scim/v2/Users/${made.id}`, type: 'User' }]);
  });

  it('keeps a userName that is no address as the sign-in name, and refuses one that is a broken address', async function () {
    await newUser('kim.lee', { password: 'kim-password-1' });
    await signedIn('kim.lee', 'kim-password-1');
    for (const bad of ['kim@', 'two words@example.com', 'a@b@c'])
      expectScimError(await scim('POST', '/Users', { schemas: [USER], userName: bad }), 400, 'invalidValue');
    expectScimError(await scim('POST', '/Users', { schemas: [USER], userName: 'kim.lee' }), 409, 'uniqueness');
  });

  it('active=false ends the person’s sessions, refresh tokens, browser sign-ins and pending codes on every process within a second; sign-in is refused until active again', async function () {
    const person = await newUser('leaver@example.com', { password: 'leaver-password-1' });
    const browser = await signedIn('leaver@example.com', 'leaver-password-1');
    const granted = (await exchange(await pendingCode(browser))).body;
    expect(granted.refresh_token).to.be.a('string');
    const code = await pendingCode(browser);
    const deviceCode = await allowedDeviceCode(browser);
    // The other process has the session in its cache before the person leaves.
    expect(await introspect(granted.access_token, other)).to.equal(true);

    // Entra ID's deactivation: a capitalised op and a boolean as a string.
    const off = await patch(`/Users/${person.id}`, { op: 'Replace', path: 'active', value: 'False' });
    expect(off.status, off.text).to.equal(200);
    expect(body(off).active).to.equal(false);

    await withinASecond('the other process sees the session closed', async () => !(await introspect(granted.access_token, other)));
    expect(await introspect(granted.access_token)).to.equal(false);
    expect((await refresh(granted.refresh_token)).body.error).to.equal('invalid_grant');
    expect((await exchange(code)).body.error).to.equal('invalid_grant');
    const polled = await box.form(
      '/auth/token',
      { grant_type: DEVICE, device_code: deviceCode },
      { Authorization: basic('app', 'app-secret-123') },
    );
    expect(polled.body.error).to.equal('invalid_grant');
    // The browser is signed out: authorize shows the sign-in page, not a code.
    expect((await browser.get(authorizePath)).status).to.equal(200);
    const refused = await new FormAgent(box).signIn('leaver@example.com', 'leaver-password-1');
    expect(refused.status).to.equal(403);
    expect(refused.text).to.include('turned off');
    expect((await box.json('GET', `/users/${await restId('leaver@example.com')}`, undefined, root)).body.active).to.equal(false);
    await eventually('the close in the audit log', async () => box.logs.some((l) => l.includes('"how":"deactivated"')));

    // Okta's reactivation: no path, the value an object of attributes.
    const on = await patch(`/Users/${person.id}`, { op: 'replace', value: { active: true } });
    expect(body(on).active).to.equal(true);
    await signedIn('leaver@example.com', 'leaver-password-1');
  });

  it('deactivation racing sign-ins and refreshes: nothing obtained before it commits outlives it', async function () {
    this.timeout(120_000);
    const person = await newUser('racer@example.com', { password: 'racer-password-1' });
    const grants = [];
    for (let i = 0; i < 6; i++)
      grants.push((await exchange(await pendingCode(await signedIn('racer@example.com', 'racer-password-1')))).body);
    const browsers = await Promise.all(Array.from({ length: 12 }, () => Promise.resolve(new FormAgent(box))));
    const [, refreshed, signIns] = await Promise.all([
      patch(`/Users/${person.id}`, { op: 'replace', path: 'active', value: false }),
      Promise.all(grants.map((g) => refresh(g.refresh_token))),
      Promise.all(browsers.map(async (b) => ((await b.signIn('racer@example.com', 'racer-password-1')).status === 303 ? b : undefined))),
    ]);
    // Whatever won its race before the close, the close ended it.
    for (const r of refreshed.filter((x) => x.status === 200)) {
      expect(await introspect(r.body.access_token)).to.equal(false);
      expect((await refresh(r.body.refresh_token)).body.error).to.equal('invalid_grant');
    }
    for (const b of signIns.filter((x): x is FormAgent => x !== undefined)) expect((await b.get(authorizePath)).status).to.equal(200);
    for (const g of grants) expect(await introspect(g.access_token)).to.equal(false);
  });

  it('searches by POST /.search as by GET, and answers a method a path does not take with 405 and Allow', async function () {
    const made = await newUser('searched@example.com', { displayName: 'Searched' });
    const found = await scim('POST', '/Users/.search', {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:SearchRequest'],
      filter: 'userName eq "searched@example.com"',
      attributes: ['displayName'],
    });
    expect(found.status, found.text).to.equal(200);
    expect(body(found).Resources).to.deep.equal([{ schemas: [USER], id: made.id, displayName: 'Searched' }]);
    const wrong = await scim('DELETE', '/Users');
    expectScimError(wrong, 405);
    expect(wrong.headers.get('allow')).to.equal('GET, POST');
    expectScimError(await scim('POST', '/.search', { schemas: ['urn:ietf:params:scim:api:messages:2.0:SearchRequest'] }), 501);
  });

  it('filters match literally: an injection is a string, a wildcard is a character', async function () {
    await newUser('filter-target@example.com');
    expect(body(await search('Users', 'userName eq "filter-target@example.com"')).totalResults).to.equal(1);
    for (const hostile of [
      `userName eq "x' OR '1'='1"`,
      'userName eq "x\\" or userName pr or \\"\\"=\\""',
      'userName co "%"',
      'userName sw "_"',
    ]) {
      const res = await search('Users', hostile);
      expect(res.status, `${hostile}: ${res.text}`).to.equal(200);
      expect(body(res).totalResults, hostile).to.equal(0);
    }
  });

  it('refuses a filter that is unknown, malformed or costly with 400 invalidFilter before it reaches the database', async function () {
    const many = Array.from({ length: 21 }, (_, i) => `userName eq "p${i}@example.com"`).join(' or ');
    const deep = `${'not ('.repeat(10)}userName pr${')'.repeat(10)}`;
    for (const bad of [
      'password eq "x"',
      'userName eq unquoted',
      'userName',
      'noSuch eq "x"',
      'active gt true',
      'name eq "x"',
      many,
      deep,
      `userName eq "${'x'.repeat(2001)}"`,
    ]) {
      expectScimError(await search('Users', bad), 400, 'invalidFilter');
    }
  });

  it('a PATCH cannot set id, meta, groups or a password hash, and a refused PATCH changes nothing', async function () {
    const target = await newUser('target@example.com', { password: 'target-password-1' });
    const holder = await newUser('holder@example.com', { password: 'holder-password-1' });
    const before = body(await scim('GET', `/Users/${target.id}`));
    const refusals: [unknown, string][] = [
      [{ op: 'replace', path: 'id', value: holder.id }, 'mutability'],
      [{ op: 'replace', value: { id: holder.id } }, 'mutability'],
      [{ op: 'replace', path: 'meta.created', value: '2000-01-01T00:00:00Z' }, 'mutability'],
      [{ op: 'add', path: 'groups', value: [{ value: '1' }] }, 'mutability'],
      [{ op: 'replace', path: 'passwordHash', value: 'x' }, 'invalidPath'],
      [{ op: 'replace', path: 'password_hash', value: 'x' }, 'invalidPath'],
    ];
    for (const [operation, scimType] of refusals) {
      // The first operation would change the name: refused together, nothing of it is kept.
      const res = await patch(`/Users/${target.id}`, { op: 'replace', path: 'displayName', value: 'Changed' }, operation);
      expectScimError(res, 400, scimType);
    }
    expect(body(await scim('GET', `/Users/${target.id}`)).meta.version).to.equal(before.meta.version);

    // A hash sent as the password is a password like any other: hashed again, never stored as the hash.
    // No answer of the box carries a hash (an attacker who has one took it from the database), so it is read there.
    const storedHash = async (email: string): Promise<string> => {
      const db = new pg.Client({ connectionString: box.databaseUrl });
      await db.connect();
      try {
        return (await db.query<{ password_hash: string }>('SELECT password_hash FROM users WHERE email = $1', [email])).rows[0]!
          .password_hash;
      } finally {
        await db.end();
      }
    };
    const holderHash = await storedHash('holder@example.com');
    expect(holderHash).to.match(/^\$argon2id\$/);
    expect((await patch(`/Users/${target.id}`, { op: 'replace', path: 'password', value: holderHash })).status).to.equal(200);
    const targetHash = await storedHash('target@example.com');
    expect(targetHash).to.not.equal(holderHash);
    expect((await new FormAgent(box).signIn('target@example.com', 'holder-password-1')).status).to.equal(401);
    await signedIn('target@example.com', holderHash);
  });

  it('refuses a group member that is nobody, another box’s person, or a group, and changes nothing', async function () {
    const member = await newUser('member@example.com');
    const group = body(await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'Engineering', members: [{ value: member.id }] }));
    // Another box (its own database): its person's id names nobody here.
    const elsewhere = await Box.start();
    try {
      const elsewhereRoot = await elsewhere.rootToken();
      const made = await elsewhere.json('POST', '/users', { email: 'x@elsewhere.example', password: 'elsewhere-1' }, elsewhereRoot);
      const filter = encodeURIComponent('userName eq "x@elsewhere.example"');
      const [foreign] = body(await scim('GET', `/Users?filter=${filter}`, undefined, elsewhereRoot, {}, elsewhere)).Resources;
      expect(foreign.id).to.be.a('string');
      expectScimError(await scim('GET', `/Users/${foreign.id}`), 404);
      const refused = await patch(`/Groups/${group.id}`, { op: 'add', path: 'members', value: [{ value: foreign.id }] });
      expectScimError(refused, 400, 'invalidValue');
      expect((await elsewhere.json('GET', `/users/${made.body.id}`, undefined, elsewhereRoot)).body.groups).to.deep.equal([]);
    } finally {
      await elsewhere.stop();
    }
    expectScimError(await patch(`/Groups/${group.id}`, { op: 'add', path: 'members', value: [{ value: 'abc' }] }), 400, 'invalidValue');
    expectScimError(
      await patch(`/Groups/${group.id}`, { op: 'add', path: 'members', value: [{ value: group.id, type: 'Group' }] }),
      400,
      'invalidValue',
    );
    const after = body(await scim('GET', `/Groups/${group.id}`));
    expect(after.members.map((m: { value: string }) => m.value)).to.deep.equal([member.id]);
    expect(after.meta.version).to.equal(group.meta.version);
  });

  it('members added by many requests at once are all kept (Entra ID adds them in parallel)', async function () {
    const group = body(await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'Parallel' }));
    const people = [];
    for (let i = 0; i < 12; i++) people.push(await newUser(`parallel-${i}@example.com`));
    const added = await Promise.all(
      people.map((p) => patch(`/Groups/${group.id}`, { op: 'Add', path: 'members', value: [{ value: p.id }] })),
    );
    expect(added.map((r) => r.status)).to.deep.equal(people.map(() => 200));
    const members = body(await scim('GET', `/Groups/${group.id}`)).members.map((m: { value: string }) => m.value);
    expect(members.sort()).to.deep.equal(people.map((p) => p.id).sort());
  });

  it('If-Match: a stale version is 412 and changes nothing; the current one writes', async function () {
    const user = await newUser('versioned@example.com');
    const stale = user.meta as { version: string };
    expect((await patch(`/Users/${user.id}`, { op: 'replace', path: 'displayName', value: 'First' })).status).to.equal(200);
    const refused = await scim(
      'PATCH',
      `/Users/${user.id}`,
      { schemas: [PATCH], Operations: [{ op: 'replace', path: 'displayName', value: 'Second' }] },
      directory,
      { 'If-Match': stale.version },
    );
    expectScimError(refused, 412);
    const current = await scim('GET', `/Users/${user.id}`);
    expect(body(current).displayName).to.equal('First');
    const ok = await scim(
      'PATCH',
      `/Users/${user.id}`,
      { schemas: [PATCH], Operations: [{ op: 'replace', path: 'displayName', value: 'Second' }] },
      directory,
      { 'If-Match': current.headers.get('etag')! },
    );
    expect(ok.status, ok.text).to.equal(200);
  });

  it('If-None-Match: the current version (weakly, in a list, or *) is 304 with the ETag and no body; another is 200', async function () {
    const user = await newUser('cached@example.com');
    const group = body(await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'cached-group', members: [{ value: user.id }] }));
    for (const path of [`/Users/${user.id}`, `/Groups/${group.id}`]) {
      const read = await scim('GET', path);
      const version = read.headers.get('etag')!;
      expect(version).to.match(/^W\/"/);
      const strong = version.replace(/^W\//, '');
      for (const asked of [version, strong, `"other", ${version}`, '*']) {
        const res = await scim('GET', path, undefined, directory, { 'If-None-Match': asked });
        expect(res.status, `${path} ${asked}: ${res.text}`).to.equal(304);
        expect(res.headers.get('etag')).to.equal(version);
        expect(res.text).to.equal('');
      }
      const other = await scim('GET', path, undefined, directory, { 'If-None-Match': 'W/"not-this-one"' });
      expect(other.status).to.equal(200);
      expect(body(other).id).to.equal(body(read).id);
    }
    // A change makes the version held a past one: the new representation, 200.
    const held = (await scim('GET', `/Users/${user.id}`)).headers.get('etag')!;
    expect((await patch(`/Users/${user.id}`, { op: 'replace', path: 'displayName', value: 'Changed' })).status).to.equal(200);
    const changed = await scim('GET', `/Users/${user.id}`, undefined, directory, { 'If-None-Match': held });
    expect(changed.status).to.equal(200);
    expect(body(changed).displayName).to.equal('Changed');
    // Who may not read it learns nothing from it either; a resource that is not there is 404.
    expect((await scim('GET', `/Users/${user.id}`, undefined, '', { 'If-None-Match': '*' })).status).to.equal(401);
    expectScimError(await scim('GET', '/Users/999999999', undefined, directory, { 'If-None-Match': '*' }), 404);
  });

  it('answers bad bodies with 4xx and the RFC’s body: a huge one 413, broken JSON 400, another media type 415', async function () {
    expectScimError(
      await scim('POST', '/Users', JSON.stringify({ schemas: [USER], userName: 'big@example.com', displayName: 'x'.repeat(300_000) })),
      413,
    );
    expectScimError(await scim('POST', '/Users', '{"userName": '), 400);
    const form = await box.request('POST', '/scim/v2/Users', {
      headers: { Authorization: `Bearer ${directory}`, 'Content-Type': 'text/plain' },
      body: 'userName=x',
    });
    expectScimError(form, 415);
    const someone = await newUser('syntax@example.com');
    expectScimError(await scim('PATCH', `/Users/${someone.id}`, { Operations: [] }), 400, 'invalidSyntax');
    expectScimError(await scim('GET', '/Users/not-a-number'), 404);
    expect((await box.json('GET', '/users?email=big@example.com', undefined, root)).body).to.deep.equal([]);
  });
});
