// A SCIM User's id is the person's public sub (issue 67 item 4, "SCIM"; api/people/scim/resources.ts):
// on a box of opaque subs, the opaque id a public client's ID token and UserInfo carry, in the
// resource, its location, a group's members and filters; the row id, which would tell the
// directory (and whoever reads its logs) how many people the box has, names nobody, nor does a
// pairwise client's sub of the person (the attack: "a pairwise sub of client A presented to
// client B ... SCIM"). A box that kept its row ids as public subs (migration 036) keeps them as
// SCIM ids, as before.
import { expect } from 'chai';
import { decodeJwt } from 'jose';
import { Box, basic } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';
import { expectError, expectList, filter, GROUP, listed, patch, provisioner, restIdOf, USER, type Scim } from '../support/scim.js';

const CALLBACK = 'https://rp.example/cb';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const PASSWORD = 'a-good-password-1';

const rp = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  grant_types: ['authorization_code'],
  first_party: true,
  auth: { authorization_code: { redirect_uri: CALLBACK } },
  ...extra,
});

/** A box with a directory, a public client (pub) and a pairwise one (pa). */
class Setup {
  scim!: Scim;
  root!: string;
  readonly secrets: Record<string, string> = {};
  constructor(readonly box: Box) {}

  static async start(env: Record<string, string> = {}): Promise<Setup> {
    const setup = new Setup(await Box.start({ env }));
    setup.root = await setup.box.rootToken();
    setup.scim = await provisioner(setup.box, 'directory', { 'Content-Type': 'application/scim+json' });
    setup.secrets.pub = (await setup.box.addClient('pub', rp(), { policy: false })).secret;
    setup.secrets.pa = (await setup.box.addClient('pa', rp({ subject_type: 'pairwise' }), { policy: false })).secret;
    return setup;
  }

  /** The directory provisions `userName`: their SCIM resource. */
  async provision(userName: string): Promise<Record<string, any>> {
    const made = await this.scim('POST', '/Users', { schemas: [USER], userName, password: PASSWORD });
    expect(made.status, made.text).to.equal(201);
    expect(made.headers.get('location')).to.equal(made.body.meta.location);
    return made.body;
  }

  /** The person's row id, as the REST API names them. */
  rowId(email: string): Promise<number> {
    return restIdOf(this.box, this.root, email);
  }

  /** The sub `client` is given of the person signing in with `email`: its ID token's, checked against UserInfo's. */
  async subOf(email: string, client: string): Promise<string> {
    const browser = new FormAgent(this.box);
    expect((await browser.signIn(email, PASSWORD)).status).to.equal(303);
    const asked = await browser.get(
      `/auth/authorize?${new URLSearchParams({ client_id: client, redirect_uri: CALLBACK, response_type: 'code', scope: 'openid' })}`,
    );
    expect(asked.status, asked.text).to.equal(302);
    const code = new URL(asked.headers.get('location')!).searchParams.get('code')!;
    const tokens = await this.box.form(
      '/auth/token',
      { grant_type: 'authorization_code', code, redirect_uri: CALLBACK },
      { Authorization: basic(client, this.secrets[client]!) },
    );
    expect(tokens.status, tokens.text).to.equal(200);
    const sub = decodeJwt(tokens.body.id_token as string).sub!;
    const info = await this.box.request('GET', '/auth/userinfo', { headers: { Authorization: `Bearer ${tokens.body.access_token}` } });
    expect(info.body.sub).to.equal(sub);
    return sub;
  }

  async group(displayName: string, members: string[]): Promise<Record<string, any>> {
    const made = await this.scim('POST', '/Groups', { schemas: [GROUP], displayName, members: members.map((value) => ({ value })) });
    expect(made.status, made.text).to.equal(201);
    return made.body;
  }

  memberValues = async (groupId: string): Promise<string[]> =>
    ((await this.scim('GET', `/Groups/${groupId}`)).body.members ?? []).map((m: { value: string }) => m.value);

  /** Whom each filter finds among the Users, or the Groups: their ids. */
  async found(kind: 'Users' | 'Groups', expression: string): Promise<string[]> {
    const res = await this.scim('GET', `/${kind}?${filter(expression)}`);
    expect(res.status, res.text).to.equal(200);
    return listed(res).map((r) => r.id as string);
  }
}

describe('SCIM: a person’s id is their public sub', function () {
  this.timeout(120_000);

  describe('on a box of opaque subs', function () {
    let s: Setup;
    let ann: Record<string, any>;
    let annRow: number;
    before(async function () {
      s = await Setup.start();
      ann = await s.provision('ann@example.com');
      annRow = await s.rowId('ann@example.com');
    });
    after(async () => s?.box.stop());

    it("is the sub a public client's ID token and UserInfo carry: in id, meta.location, a group's members and filters", async function () {
      const sub = await s.subOf('ann@example.com', 'pub');
      expect(sub).to.match(UUID).and.not.equal(String(annRow));
      expect(ann.id).to.equal(sub);
      expect(ann.meta.location).to.equal(`${s.box.url}/scim/v2/Users/${sub}`);
      const read = await s.scim('GET', `/Users/${sub}`);
      expect(read.status, read.text).to.equal(200);
      expect(read.body).to.include({ id: sub, userName: 'ann@example.com' });

      const group = await s.group('ann-only', [sub]);
      expect(group.members).to.deep.equal([{ value: sub, $ref: `${s.box.url}/scim/v2/Users/${sub}`, type: 'User' }]);
      expect(await s.found('Users', `id eq "${sub}"`)).to.deep.equal([sub]);
      expect(await s.found('Users', `id sw "${sub.slice(0, 8)}"`)).to.deep.equal([sub]);
      expect(await s.found('Groups', `members.value eq "${sub}"`)).to.deep.equal([group.id]);
      expect(await s.found('Groups', `members[value eq "${sub}"]`)).to.deep.equal([group.id]);
      // Removed by the path a directory writes (Entra ID, Okta): members[value eq "<id>"].
      const removed = await s.scim('PATCH', `/Groups/${group.id}`, patch({ op: 'remove', path: `members[value eq "${sub}"]` }));
      expect(removed.status, removed.text).to.equal(200);
      expect(await s.memberValues(group.id)).to.deep.equal([]);
    });

    it('ATTACK: the row id names nobody — 404 for every method, no filter match, refused as a member', async function () {
      const row = String(annRow);
      expectError(await s.scim('GET', `/Users/${row}`), 404);
      expectError(await s.scim('PATCH', `/Users/${row}`, patch({ op: 'replace', path: 'active', value: false })), 404);
      expectError(await s.scim('PUT', `/Users/${row}`, { schemas: [USER], userName: 'taken@example.com', active: false }), 404);
      expectError(await s.scim('DELETE', `/Users/${row}`), 404);
      expect((await s.scim('GET', `/Users/${ann.id}`)).body).to.include({ userName: 'ann@example.com', active: true });

      expect(await s.found('Users', `id eq "${row}"`)).to.deep.equal([]);
      expect(await s.found('Users', `id le "${row}" and id ge "${row}"`)).to.deep.equal([]);
      const group = await s.group('ann-by-sub', [ann.id]);
      expect(await s.found('Groups', `members.value eq "${row}"`)).to.deep.equal([]);

      expectError(
        await s.scim('POST', '/Groups', { schemas: [GROUP], displayName: 'by-row', members: [{ value: row }] }),
        400,
        'invalidValue',
      );
      expectError(
        await s.scim('PATCH', `/Groups/${group.id}`, patch({ op: 'add', path: 'members', value: [{ value: row }] })),
        400,
        'invalidValue',
      );
      expectError(
        await s.scim('PUT', `/Groups/${group.id}`, { schemas: [GROUP], displayName: 'ann-by-sub', members: [{ value: row }] }),
        400,
        'invalidValue',
      );
      // A removal by the row id takes nobody out.
      await s.scim('PATCH', `/Groups/${group.id}`, patch({ op: 'remove', path: `members[value eq "${row}"]` }));
      expect(await s.memberValues(group.id)).to.deep.equal([ann.id]);
      expectList(await s.scim('GET', '/Groups?filter=' + encodeURIComponent('displayName eq "by-row"')), 0);
    });

    it("ATTACK: a pairwise client's sub of the person names nobody either", async function () {
      const pairwise = await s.subOf('ann@example.com', 'pa');
      expect(pairwise).to.not.equal(ann.id);
      expectError(await s.scim('GET', `/Users/${pairwise}`), 404);
      expectError(await s.scim('PATCH', `/Users/${pairwise}`, patch({ op: 'replace', path: 'active', value: false })), 404);
      expectError(await s.scim('DELETE', `/Users/${pairwise}`), 404);
      expect(await s.found('Users', `id eq "${pairwise}"`)).to.deep.equal([]);
      const group = await s.group('pairwise-tried', []);
      expectError(
        await s.scim('PATCH', `/Groups/${group.id}`, patch({ op: 'add', path: 'members', value: [{ value: pairwise }] })),
        400,
        'invalidValue',
      );
      expect(await s.memberValues(group.id)).to.deep.equal([]);
      expect((await s.scim('GET', `/Users/${ann.id}`)).body.active).to.equal(true);
    });
  });

  describe('on a box that kept its row ids as public subs (BOXAUTH_PUBLIC_SUBJECTS=sequential, migration 036)', function () {
    let s: Setup;
    before(async function () {
      s = await Setup.start({ BOXAUTH_PUBLIC_SUBJECTS: 'sequential' });
    });
    after(async () => s?.box.stop());

    it('names people by their row ids, as before: id, location, members, filters, and the public sub agree', async function () {
      const bob = await s.provision('bob@example.com');
      const row = String(await s.rowId('bob@example.com'));
      expect(bob.id).to.equal(row);
      expect(bob.meta.location).to.equal(`${s.box.url}/scim/v2/Users/${row}`);
      expect(await s.subOf('bob@example.com', 'pub')).to.equal(row);
      expect((await s.scim('GET', `/Users/${row}`)).body).to.include({ id: row, userName: 'bob@example.com' });
      expect(await s.found('Users', `id eq "${row}"`)).to.deep.equal([row]);

      const group = await s.group('bob-by-row', [row]);
      expect(group.members).to.deep.equal([{ value: row, $ref: `${s.box.url}/scim/v2/Users/${row}`, type: 'User' }]);
      expect(await s.found('Groups', `members[value eq "${row}"]`)).to.deep.equal([group.id]);
      const off = await s.scim('PATCH', `/Users/${row}`, patch({ op: 'replace', path: 'active', value: false }));
      expect(off.status, off.text).to.equal(200);

      // A pairwise client's sub is still nobody's SCIM id.
      await s.scim('PATCH', `/Users/${row}`, patch({ op: 'replace', path: 'active', value: true }));
      const pairwise = await s.subOf('bob@example.com', 'pa');
      expectError(await s.scim('GET', `/Users/${pairwise}`), 404);
      expectError(
        await s.scim('PATCH', `/Groups/${group.id}`, patch({ op: 'add', path: 'members', value: [{ value: pairwise }] })),
        400,
        'invalidValue',
      );
    });
  });
});
