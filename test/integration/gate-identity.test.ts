// Who the decision point tells an app the caller is, at every door: names in any script,
// and names stored before the box refused control characters in them, reach the app
// percent-encoded in the identity headers (and as they are in the upstream JWT) without
// ending the process; and an email is vouched for only when the box verified it
// (docs/guides/guard-your-apps.md).
import { expect } from 'chai';
import { createLocalJWKSet, jwtVerify } from 'jose';
import pg from 'pg';
import { Box } from '../support/box.js';
import { grpcCheck } from '../support/grpc-check.js';
import { FormAgent } from '../support/form-agent.js';
import { userToken } from '../support/user-token.js';

const APP = 'names';
const AUDIENCE = 'https://names.example';
/** What the box may put in a header value it writes: visible ASCII only (RFC 9110's VCHAR). */
const VISIBLE_ASCII = /^[\x21-\x7e]*$/;

/** A group header as an app reads it: split on commas, each name percent-decoded. */
const groupsIn = (header: string): string[] => header.split(',').map(decodeURIComponent);

describe('who the decision point says the caller is', function () {
  this.timeout(60_000);
  let box: Box;
  let root: string;

  /** Runs SQL on the box's database, as a record written before a rule of the edge was. */
  async function sql(text: string, values: unknown[]): Promise<void> {
    const db = new pg.Client({ connectionString: box.databaseUrl });
    await db.connect();
    try {
      await db.query(text, values);
    } finally {
      await db.end();
    }
  }

  const newGroup = async (name: string): Promise<number> => {
    const res = await box.json('POST', '/groups', { name }, root);
    expect(res.status, res.text).to.equal(201);
    return res.body.id as number;
  };
  const newUser = async (email: string, groupIds: number[]): Promise<number> => {
    const res = await box.json('POST', '/users', { email, password: 'a-good-password-1', 'group-ids': groupIds }, root);
    expect(res.status, res.text).to.equal(201);
    return res.body.id as number;
  };

  /** Forward-auth as Traefik asks it. */
  const forwardAuth = (token: string, method = 'GET') =>
    box.request('GET', `/authz/forward-auth/${APP}`, {
      headers: {
        'X-Forwarded-Method': method,
        'X-Forwarded-Proto': 'https',
        'X-Forwarded-Host': 'names.example',
        'X-Forwarded-Uri': '/page',
        Authorization: `Bearer ${token}`,
      },
    });

  before(async function () {
    box = await Box.start({ env: { BOXAUTH_REGISTRATION: 'true' } });
    root = await box.rootToken();
    const put = await box.json('PUT', `/App/${APP}`, { urls: [AUDIENCE], upstream: { token: { header: 'X-Jwt' } } }, root);
    expect(put.status, put.text).to.equal(201);
  });
  after(async function () {
    await box?.stop();
  });

  describe('names outside visible ASCII, at every door', function () {
    /** Each person, and the email and group names the app must read back. */
    const people: { id: number; token: string; email: string; groups: string[] }[] = [];

    before(async function () {
      await box.json('PUT', '/AccessPolicy/names-anyone', { app: APP, engine: 'allow' }, root);
      // A person whose name is outside Latin-1, in groups whose names hold a comma, a space and a %.
      const team = await newGroup('Zespół');
      const rd = await newGroup('R&D, Sales 100%');
      const lukasz = await newUser('łukasz@example.com', [team, rd]);
      people.push({ id: lukasz, token: '', email: 'łukasz@example.com', groups: ['Zespół', 'R&D, Sales 100%'] });
      // Names stored before the edge refused control characters (written here as they were then).
      const old = await newGroup('old-group');
      const ctl = await newUser('old@example.com', [old]);
      const email = 'ol\u0001d\t\u007f😀é@example.com';
      await sql('UPDATE users SET email = $1 WHERE id = $2', [email, ctl]);
      await sql('UPDATE groups SET name = $1 WHERE id = $2', ['Zesp\u0001ół\r\n', old]);
      people.push({ id: ctl, token: '', email, groups: ['Zesp\u0001ół\r\n'] });
      // No decision has read these people yet: the first one reads them as they are now.
      for (const p of people) p.token = await userToken(box, p.id, 'root', AUDIENCE);
    });

    it('forward-auth and the HTTP door: 200, each name percent-encoded as UTF-8 in visible ASCII, decoded back exactly', async function () {
      for (const p of people) {
        const answers = [
          await forwardAuth(p.token),
          await box.request('GET', `/authz/http/${APP}/page`, { headers: { Authorization: `Bearer ${p.token}`, Host: 'names.example' } }),
        ];
        for (const res of answers) {
          expect(res.status, `${p.email}: ${res.text}`).to.equal(200);
          const email = res.headers.get('x-auth-request-email')!;
          const groups = res.headers.get('x-auth-request-groups')!;
          for (const value of [email, groups, res.headers.get('x-auth-request-user')!, res.headers.get('x-auth-request-client')!]) {
            expect(value, JSON.stringify(value)).to.match(VISIBLE_ASCII);
          }
          expect(decodeURIComponent(email)).to.equal(p.email);
          expect(groupsIn(groups)).to.have.members(p.groups);
          expect(res.headers.get('x-auth-request-user')).to.equal(String(p.id));
        }
      }
      const lukasz = await forwardAuth(people[0]!.token);
      expect(lukasz.headers.get('x-auth-request-email')).to.equal('%C5%82ukasz@example.com');
      expect(lukasz.headers.get('x-auth-request-groups')!.split(',')).to.have.members(['Zesp%C3%B3%C5%82', 'R&D%2C%20Sales%20100%25']);
    });

    it('the upstream JWT carries the names as they are (UTF-8 JSON)', async function () {
      const jwks = createLocalJWKSet((await box.request('GET', '/.well-known/jwks.json')).body);
      for (const p of people) {
        const res = await forwardAuth(p.token);
        const { payload } = await jwtVerify(res.headers.get('x-jwt')!, jwks, { issuer: box.url, audience: AUDIENCE });
        expect(payload.email).to.equal(p.email);
        expect(payload.groups).to.have.members(p.groups);
      }
    });

    it("Envoy's gRPC door: the headers to set are encoded the same way", async function () {
      for (const p of people) {
        const answer = await grpcCheck(box.env.BOXAUTH_GRPC_PORT!, {
          attributes: {
            request: {
              http: {
                method: 'GET',
                path: '/page',
                host: 'names.example',
                scheme: 'https',
                headers: { authorization: `Bearer ${p.token}` },
              },
            },
            context_extensions: { app: APP },
          },
        });
        expect(answer.status.code, JSON.stringify(answer)).to.equal(0);
        const set = Object.fromEntries(answer.ok_response!.headers.map((h) => [h.header.key.toLowerCase(), h.header.value]));
        for (const value of Object.values(set)) expect(value, JSON.stringify(value)).to.match(VISIBLE_ASCII);
        expect(decodeURIComponent(set['x-auth-request-email']!)).to.equal(p.email);
        expect(groupsIn(set['x-auth-request-groups']!)).to.have.members(p.groups);
      }
    });

    it('AuthZEN: the person is decided on, and the answer is JSON', async function () {
      for (const p of people) {
        const res = await box.json(
          'POST',
          `/apps/${APP}/access/v1/evaluation`,
          { subject: { type: 'user', id: String(p.id) }, action: { name: 'GET' }, resource: { type: 'page', id: '1' } },
          root,
        );
        expect(res.status, res.text).to.equal(200);
        expect(res.body.decision).to.equal(true);
      }
    });

    it('the process lives on and keeps serving, under many such requests at once', async function () {
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          i % 2
            ? forwardAuth(people[i % people.length]!.token)
            : box.request('GET', `/authz/http/${APP}/page`, {
                headers: { Authorization: `Bearer ${people[i % people.length]!.token}`, Host: 'names.example' },
              }),
        ),
      );
      expect(answers.map((a) => a.status)).to.deep.equal(answers.map(() => 200));
      expect(box.process!.exitCode).to.equal(null);
      expect((await box.request('GET', '/healthz')).status).to.equal(200);
    });
  });

  describe("an email is the person's only when the box verified it", function () {
    // docs/guides/guard-your-apps.md: oauth2-proxy's --email-domain, as a policy.
    const CORP_PEOPLE = { user: { email: '#@corp\\.example$', email_verified: true } };
    let stranger: { id: number; token: string };
    let staff: { id: number; token: string };

    const ask = (app: string, token: string) =>
      box.request('GET', `/authz/http/${app}/reports`, { headers: { Authorization: `Bearer ${token}`, Host: `${app}.example` } });

    before(async function () {
      for (const app of ['corp', 'corp-open']) {
        const put = await box.json(
          'PUT',
          `/App/${app}`,
          { urls: [`https://${app}.example`], upstream: { token: { header: 'X-Jwt' } } },
          root,
        );
        expect(put.status, put.text).to.equal(201);
      }
      await box.json('PUT', '/AccessPolicy/corp-people', { app: 'corp', engine: 'matcho', matcho: CORP_PEOPLE }, root);
      await box.json('PUT', '/AccessPolicy/corp-open-anyone', { app: 'corp-open', engine: 'allow' }, root);
      // A stranger signs themselves up with the company's domain: nobody vouched for the address.
      const signUp = await new FormAgent(box).signUpPoster();
      const signedUp = await signUp('ceo@corp.example', 'a-good-password-1');
      expect(signedUp.status, signedUp.text).to.equal(303);
      const found = await box.json('GET', `/users?email=${encodeURIComponent('ceo@corp.example')}`, undefined, root);
      expect(found.body[0].email_verified).to.equal(false);
      stranger = { id: found.body[0].id, token: '' };
      // An administrator made this one: verified.
      staff = { id: await newUser('cfo@corp.example', []), token: '' };
      for (const p of [stranger, staff]) p.token = await userToken(box, p.id, 'root', 'https://corp.example');
    });

    it("the guide's email-domain policy refuses the self-registered address and allows the verified one", async function () {
      const refused = await ask('corp', stranger.token);
      expect(refused.status, refused.text).to.equal(403);
      const allowed = await ask('corp', staff.token);
      expect(allowed.status, allowed.text).to.equal(200);
      expect(allowed.headers.get('x-auth-request-email')).to.equal('cfo@corp.example');
      // AuthZEN evaluates the same request object.
      const evaluate = async (id: number) =>
        (
          await box.json(
            'POST',
            '/apps/corp/access/v1/evaluation',
            { subject: { type: 'user', id: String(id) }, action: { name: 'GET' }, resource: { type: 'reports', id: '1' } },
            root,
          )
        ).body.decision;
      expect(await evaluate(stranger.id)).to.equal(false);
      expect(await evaluate(staff.id)).to.equal(true);
    });

    it('allowed anyway, an unverified address gets no email header; the JWT says email_verified', async function () {
      const open = (id: number) => userToken(box, id, 'root', 'https://corp-open.example');
      const res = await ask('corp-open', await open(stranger.id));
      expect(res.status, res.text).to.equal(200);
      expect(res.headers.get('x-auth-request-email')).to.equal('');
      expect(res.headers.get('x-auth-request-user')).to.equal(String(stranger.id));
      const jwks = createLocalJWKSet((await box.request('GET', '/.well-known/jwks.json')).body);
      const { payload } = await jwtVerify(res.headers.get('x-jwt')!, jwks, { issuer: box.url, audience: 'https://corp-open.example' });
      expect(payload).to.include({ email: 'ceo@corp.example', email_verified: false });
      const verified = await ask('corp-open', await open(staff.id));
      expect(verified.headers.get('x-auth-request-email')).to.equal('cfo@corp.example');
    });

    it("the box's own API: a policy on the address requires email_verified too", async function () {
      await box.json(
        'PUT',
        '/AccessPolicy/corp-people-read-groups',
        { engine: 'matcho', matcho: { 'request-method': 'get', uri: '/groups', ...CORP_PEOPLE } },
        root,
      );
      try {
        const groups = async (id: number) => (await box.json('GET', '/groups', undefined, await userToken(box, id))).status;
        expect(await groups(stranger.id)).to.equal(403);
        expect(await groups(staff.id)).to.equal(200);
      } finally {
        await box.json('DELETE', '/AccessPolicy/corp-people-read-groups', undefined, root);
      }
    });
  });
});
