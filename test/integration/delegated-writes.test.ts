// A client trusted with one app's records plays the attacker: it tries to write
// itself rights on the box's API, policies for another app, clients and apps that
// reach beyond its own (docs/concepts/access-control.md, "Delegating records").
// The request object holds the record written (`body`), and whatever its policy
// says, a writer never grants more than it holds.
import { expect } from 'chai';
import { Box, basic, boxForSuite } from '../support/box.js';

const WIKI = 'http://wiki.example.test';
const PAYROLL = 'http://payroll.example.test';

describe('delegated writes grant no more than the writer holds', function () {
  let box: Box;
  let root: string;
  /** May write everything named wiki…: Apps, AccessPolicies, Clients (a policy without `body`). */
  let naive: string;

  boxForSuite((b, r) => ([box, root] = [b, r]));

  async function put(path: string, body: unknown, token = root): Promise<void> {
    const res = await box.json('PUT', path, body, token);
    expect(res.status, `PUT ${path}: ${res.text}`).to.be.oneOf([200, 201]);
  }

  /** A client_credentials client whose only policies are `policies` (linked to it), and a token of it. */
  async function delegate(id: string, policies: Record<string, Record<string, unknown>>): Promise<string> {
    const { secret } = await box.addClient(id, {}, { policy: false });
    for (const [name, policy] of Object.entries(policies))
      await put(`/AccessPolicy/${name}`, { ...policy, link: [{ id, resourceType: 'Client' }] });
    const res = await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic(id, secret) });
    expect(res.status, res.text).to.equal(200);
    return res.body.access_token as string;
  }

  const signInClient = (audience: string[], extra: Record<string, unknown> = {}): Record<string, unknown> => ({
    grant_types: ['authorization_code'],
    auth: { authorization_code: { redirect_uri: `${WIKI}/.boxauth/callback` } },
    audience,
    ...extra,
  });

  before(async function () {
    await put('/App/wiki', { urls: [WIKI] });
    await put('/App/payroll', { urls: [PAYROLL] });
    naive = await delegate('naive', {
      'naive-writes': {
        engine: 'matcho',
        matcho: {
          'request-method': { $enum: ['put', 'post', 'delete'] },
          params: { 'resource/type': { $enum: ['AccessPolicy', 'Client', 'App'] }, 'resource/id': '#^wiki' },
        },
      },
    });
  });

  describe('AccessPolicy', function () {
    it('a delegate cannot write itself a policy of the box API: not allow, not linked to itself, not global', async function () {
      const attempts = [
        { engine: 'allow', link: [{ id: 'naive', resourceType: 'Client' }] },
        { engine: 'matcho', link: [{ id: 'naive', resourceType: 'Client' }], matcho: { 'request-method': 'get' } },
        { engine: 'allow' },
      ];
      for (const [i, policy] of attempts.entries()) {
        const res = await box.json('PUT', `/AccessPolicy/wiki-root-${i}`, policy, naive);
        expect(res.status, res.text).to.equal(403);
        expect(res.body.error).to.equal('access_denied');
        expect(res.body.error_description).to.include("guards the box's own API");
        expect((await box.json('GET', `/AccessPolicy/wiki-root-${i}`, undefined, root)).status).to.equal(404);
      }
      expect((await box.json('POST', '/AccessPolicy', { id: 'wiki-root-post', engine: 'allow' }, naive)).status).to.equal(403);
      // Still only what its policy says.
      expect((await box.json('GET', '/users', undefined, naive)).status).to.equal(403);
    });

    it('cannot relink, replace or delete a box-API policy that happens to match its names', async function () {
      const readers = { engine: 'matcho', link: [{ id: 'readers', resourceType: 'Group' }], matcho: { 'request-method': 'get' } };
      await put('/AccessPolicy/wiki-readers', readers);
      const relinked = await box.json(
        'PUT',
        '/AccessPolicy/wiki-readers',
        { ...readers, link: [{ id: 'naive', resourceType: 'Client' }] },
        naive,
      );
      expect(relinked.status, relinked.text).to.equal(403);
      expect((await box.json('DELETE', '/AccessPolicy/wiki-readers', undefined, naive)).status).to.equal(403);
      const kept = await box.json('GET', '/AccessPolicy/wiki-readers', undefined, root);
      expect(kept.body.link).to.deep.equal(readers.link);
    });

    it('cannot write, move or delete a policy of an app it may not write', async function () {
      const other = await box.json('PUT', '/AccessPolicy/wiki-payroll', { engine: 'allow', app: 'payroll' }, naive);
      expect(other.status, other.text).to.equal(403);
      expect(other.body.error_description).to.include("App 'payroll'");
      // A policy of payroll under a name the delegate's policy matches: neither deleted nor replaced.
      await put('/AccessPolicy/wiki-payroll-staff', { engine: 'allow', app: 'payroll', link: [{ id: 'staff', resourceType: 'Group' }] });
      expect((await box.json('DELETE', '/AccessPolicy/wiki-payroll-staff', undefined, naive)).status).to.equal(403);
      expect((await box.json('PUT', '/AccessPolicy/wiki-payroll-staff', { engine: 'allow', app: 'payroll' }, naive)).status).to.equal(403);
      expect((await box.json('GET', '/AccessPolicy/wiki-payroll-staff', undefined, root)).body.link).to.have.length(1);
      // Moving its own wiki policy to payroll: in place (the record written is checked as well as the one stored), or
      // as a delete and a create, each checked.
      await put('/AccessPolicy/wiki-movable', { engine: 'allow', app: 'wiki' }, naive);
      expect((await box.json('PUT', '/AccessPolicy/wiki-movable', { engine: 'allow', app: 'payroll' }, naive)).status).to.equal(403);
      expect((await box.json('DELETE', '/AccessPolicy/wiki-movable', undefined, naive)).status).to.equal(200);
      expect((await box.json('PUT', '/AccessPolicy/wiki-movable', { engine: 'allow', app: 'payroll' }, naive)).status).to.equal(403);
    });

    it('writes, changes and deletes the policies of its own app', async function () {
      const editors = { engine: 'matcho', app: 'wiki', link: [{ id: 'editors', resourceType: 'Group' }], matcho: { method: 'POST' } };
      const created = await box.json('PUT', '/AccessPolicy/wiki-editors', editors, naive);
      expect(created.status, created.text).to.equal(201);
      const changed = await box.json(
        'PUT',
        '/AccessPolicy/wiki-editors',
        { ...editors, link: [{ id: 'naive', resourceType: 'Client' }] },
        naive,
      );
      expect(changed.status, changed.text).to.equal(200);
      expect((await box.json('DELETE', '/AccessPolicy/wiki-editors', undefined, naive)).status).to.equal(200);
    });
  });

  describe('Client', function () {
    it('cannot take over a client that a box-API policy links to: not create it, rotate its secret, nor delete it', async function () {
      // A policy naming a client that does not exist (yet): whoever creates it holds its rights.
      await put('/AccessPolicy/ops-allow', { engine: 'allow', link: [{ id: 'wiki-ops', resourceType: 'Client' }] });
      const created = await box.json(
        'PUT',
        '/Client/wiki-ops',
        { grant_types: ['client_credentials'], secret: 'mine-now-123', audience: [WIKI] },
        naive,
      );
      expect(created.status, created.text).to.equal(403);
      expect(created.body.error_description).to.include("AccessPolicy 'ops-allow'");
      expect(
        (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('wiki-ops', 'mine-now-123') })).status,
      ).to.equal(401);

      await box.addClient('wiki-sync', { audience: [WIKI] });
      const rotated = await box.json(
        'PUT',
        '/Client/wiki-sync',
        { grant_types: ['client_credentials'], secret: 'mine-now-456', audience: [WIKI] },
        naive,
      );
      expect(rotated.status, rotated.text).to.equal(403);
      expect((await box.json('DELETE', '/Client/wiki-sync', undefined, naive)).status).to.equal(403);
      expect((await box.json('GET', '/Client/wiki-sync', undefined, root)).status).to.equal(200);
    });

    it('cannot write a client of another app, an unbounded one, or a first-party one', async function () {
      await put('/AccessPolicy/payroll-bot', {
        engine: 'allow',
        app: 'payroll',
        link: [{ id: 'wiki-payroll-bot', resourceType: 'Client' }],
      });
      const attempts: [string, Record<string, unknown>, string][] = [
        ['wiki-payroll-bot', signInClient([WIKI]), "App 'payroll'"],
        ['wiki-anywhere', signInClient([]), 'needs an audience list'],
        [
          'wiki-anywhere',
          { grant_types: ['authorization_code'], auth: { authorization_code: { redirect_uri: `${WIKI}/cb` } } },
          'needs an audience list',
        ],
        ['wiki-payroll-reader', signInClient([PAYROLL]), `'${PAYROLL}'`],
        ['wiki-outside', signInClient(['https://elsewhere.example']), 'no App'],
        ['wiki-silent', signInClient([WIKI], { first_party: true }), 'first_party'],
      ];
      for (const [id, client, why] of attempts) {
        const res = await box.json('PUT', `/Client/${id}`, client, naive);
        expect(res.status, `${id}: ${res.text}`).to.equal(403);
        expect(res.body.error_description).to.include(why); // the description's quotes are single (RFC 6749 §5.2)
        expect((await box.json('GET', `/Client/${id}`, undefined, root)).status).to.equal(404);
      }
      // A client of payroll's that root made: not the delegate's to change or delete either.
      await put('/Client/wiki-payroll-ui', signInClient([PAYROLL]));
      expect((await box.json('PUT', '/Client/wiki-payroll-ui', signInClient([WIKI]), naive)).status).to.equal(403);
      expect((await box.json('DELETE', '/Client/wiki-payroll-ui', undefined, naive)).status).to.equal(403);
    });

    it("cannot shape claims, which would carry a person's data past the scopes they consented to", async function () {
      const client = await box.json(
        'PUT',
        '/Client/wiki-roles',
        signInClient([WIKI], { claims: { salary: 'user.data.salary', everything: 'user' } }),
        naive,
      );
      expect(client.status, client.text).to.equal(403);
      expect(client.body.error_description).to.include('shapes claims');
      const app = await box.json('PUT', '/App/wiki', { urls: [WIKI], claims: { everything: 'user' } }, naive);
      expect(app.status, app.text).to.equal(403);
      expect(app.body.error_description).to.include('shapes claims');
      expect((await box.json('GET', '/Client/wiki-roles', undefined, root)).status).to.equal(404);
    });

    it("writes its own app's clients, whose tokens go to its app only", async function () {
      const created = await box.json(
        'PUT',
        '/Client/wiki-bot',
        { grant_types: ['client_credentials'], secret: 'bot-secret-1', audience: [WIKI] },
        naive,
      );
      expect(created.status, created.text).to.equal(201);
      const token = await box.form(
        '/auth/token',
        { grant_type: 'client_credentials', audience: PAYROLL },
        { Authorization: basic('wiki-bot', 'bot-secret-1') },
      );
      expect(token.body.error).to.equal('invalid_target');
      expect((await box.json('PUT', '/Client/wiki-ui', signInClient([WIKI]), naive)).status).to.equal(201);
      expect((await box.json('DELETE', '/Client/wiki-ui', undefined, naive)).status).to.equal(200);
    });
  });

  describe('App', function () {
    it("cannot claim another app's host, nor sign people in through a client it may not write", async function () {
      const host = await box.json('PUT', '/App/wiki-evil', { urls: [PAYROLL], audience: 'https://wiki-evil.example.test' }, naive);
      expect(host.status, host.text).to.equal(403);
      expect(host.body.error_description).to.include("App 'payroll'");
      const signIn = await box.json(
        'PUT',
        '/App/wiki-admin-ui',
        { urls: ['http://wiki-admin.example.test'], signIn: { client: 'boxauth-admin' } },
        naive,
      );
      expect(signIn.status, signIn.text).to.equal(403);
      expect((await box.json('GET', '/App/wiki-evil', undefined, root)).status).to.equal(404);
    });

    it('writes an app of its own, signing in through its own client', async function () {
      await box.json('PUT', '/Client/wiki-login', signInClient([WIKI]), naive);
      const app = await box.json('PUT', '/App/wiki', { urls: [WIKI], signIn: { client: 'wiki-login' } }, naive);
      expect(app.status, app.text).to.equal(200);
    });
  });

  describe('the request object holds the record written', function () {
    it('the documented delegation: wiki-admin writes policies of the app wiki, and nothing else', async function () {
      const token = await delegate('wiki-admin', {
        'wiki-admin-app': {
          engine: 'matcho',
          matcho: { 'request-method': { $enum: ['get', 'put'] }, params: { 'resource/type': 'App', 'resource/id': 'wiki' } },
        },
        'wiki-admin-policies': {
          engine: 'matcho',
          matcho: { 'request-method': 'put', params: { 'resource/type': 'AccessPolicy', 'resource/id': '#^wiki-' }, body: { app: 'wiki' } },
        },
      });
      const editors = { engine: 'matcho', app: 'wiki', link: [{ id: 'editors', resourceType: 'Group' }], matcho: { method: 'GET' } };
      expect((await box.json('PUT', '/AccessPolicy/wiki-doc-editors', editors, token)).status).to.equal(201);
      const rootAttempt = await box.json(
        'PUT',
        '/AccessPolicy/wiki-root',
        { engine: 'allow', link: [{ id: 'wiki-admin', resourceType: 'Client' }] },
        token,
      );
      expect(rootAttempt.status).to.equal(403);
      expect((await box.json('PUT', '/AccessPolicy/wiki-doc-payroll', { ...editors, app: 'payroll' }, token)).status).to.equal(403);
    });

    it('a json-schema policy requiring {"body": {"app": "wiki"}} allows that and only that', async function () {
      const token = await delegate('schema-admin', {
        'schema-admin-app': {
          engine: 'matcho',
          matcho: { 'request-method': 'put', params: { 'resource/type': 'App', 'resource/id': '#^(wiki|payroll)$' } },
        },
        'schema-admin-policies': {
          engine: 'json-schema',
          schema: {
            required: ['body', 'params'],
            properties: {
              params: { required: ['resource/type'], properties: { 'resource/type': { const: 'AccessPolicy' } } },
              body: { required: ['app'], properties: { app: { const: 'wiki' } } },
            },
          },
        },
      });
      // schema-admin may write both apps: what refuses payroll's policy is its own policy, reading `body`.
      expect((await box.json('PUT', '/AccessPolicy/schema-wiki', { engine: 'allow', app: 'wiki' }, token)).status).to.equal(201);
      expect((await box.json('PUT', '/AccessPolicy/schema-payroll', { engine: 'allow', app: 'payroll' }, token)).status).to.equal(403);
      expect((await box.json('POST', '/AccessPolicy', { engine: 'allow', app: 'payroll' }, token)).status).to.equal(403);
    });

    it('never holds the value of a secret', async function () {
      const token = await delegate('secret-peeker', {
        'secret-peeker-writes': {
          engine: 'matcho',
          matcho: {
            'request-method': 'put',
            params: { 'resource/type': 'Client', 'resource/id': '#^wiki-' },
            body: { secret: 'a-secret-1' },
          },
        },
        'secret-peeker-app': {
          engine: 'matcho',
          matcho: { 'request-method': 'put', params: { 'resource/type': 'App', 'resource/id': 'wiki' } },
        },
      });
      const res = await box.json(
        'PUT',
        '/Client/wiki-peek',
        { grant_types: ['client_credentials'], secret: 'a-secret-1', audience: [WIKI] },
        token,
      );
      expect(res.status, res.text).to.equal(403);
      expect(res.body.error_description).to.include('no AccessPolicy allows');
    });

    it('sees a secret written as true, so a policy can allow (or refuse) setting one', async function () {
      const token = await delegate('secret-setter', {
        'secret-setter-writes': {
          engine: 'json-schema',
          schema: {
            required: ['request-method', 'params', 'body'],
            properties: {
              'request-method': { const: 'put' },
              params: { properties: { 'resource/type': { const: 'Client' }, 'resource/id': { pattern: '^wiki-' } } },
              body: { required: ['secret'], properties: { secret: { const: true } } },
            },
          },
        },
        'secret-setter-app': {
          engine: 'matcho',
          matcho: { 'request-method': 'put', params: { 'resource/type': 'App', 'resource/id': 'wiki' } },
        },
      });
      const client = { grant_types: ['client_credentials'], audience: [WIKI] };
      const set = await box.json('PUT', '/Client/wiki-set', { ...client, secret: 'a-secret-1' }, token);
      expect(set.status, set.text).to.equal(201);
      const unset = await box.json('PUT', '/Client/wiki-set', client, token);
      expect(unset.status, unset.text).to.equal(403);
      expect(unset.body.error_description).to.include('no AccessPolicy allows');
    });
  });

  it('racing writes are checked one after the other: a client becoming first-party is never deleted by the delegate', async function () {
    this.timeout(120_000);
    let deletedFirstParty = 0;
    for (let round = 0; round < 15; round++) {
      const id = `wiki-race-${round}`;
      await put(`/Client/${id}`, signInClient([WIKI]));
      const [, ...deletes] = await Promise.all([
        box.json('PUT', `/Client/${id}`, signInClient([WIKI], { first_party: true }), root),
        ...Array.from({ length: 12 }, () => box.json('DELETE', `/Client/${id}`, undefined, naive)),
      ]);
      for (const res of deletes) {
        expect(res.status, res.text).to.be.oneOf([200, 403, 404]);
        if (res.status === 200 && res.body.first_party === true) deletedFirstParty++;
      }
    }
    expect(deletedFirstParty, 'first-party clients the delegate deleted').to.equal(0);
  });
});
