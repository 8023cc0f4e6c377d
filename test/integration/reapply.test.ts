// A record PUT again as it is changes nothing (GitOps re-applies the same files all day): the
// same version, no audit event, and a secret sent again is the secret kept — the first one still
// works. A new secret is a change, named in the trail as "(changed)" and never shown.
import { expect } from 'chai';
import { Box, boxForSuite, type JsonResponse } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';

const WHSEC = 'whsec_Y2hhbmdlLW1lLWNoYW5nZS1tZS1jaGFuZ2UtbWUtY2hhbmdlLW1l';

describe('a PUT of the same body again', function () {
  this.timeout(60_000);
  let box: Box;
  let root: string;
  boxForSuite((b, r) => ([box, root] = [b, r]));

  const api = (method: string, path: string, body?: unknown): Promise<JsonResponse> => box.json(method, path, body, root);
  type Event = { id: string; detail: unknown };
  const events = async (query: string): Promise<Event[]> =>
    (await api('GET', `/AuditEvent?event=record_changed&${query}`)).body.entry.map((e: { resource: Event }) => e.resource);
  const changes = async (): Promise<string[]> => (await events('_count=1000')).map((e) => e.id);

  const BODIES: [string, Record<string, unknown>][] = [
    ['/Client/again', { grant_types: ['client_credentials'], description: 'put twice', secret: 'the-first-secret-1' }],
    ['/App/again', { urls: ['https://again.internal'], description: 'put twice' }],
    ['/AccessPolicy/again', { engine: 'allow', app: 'again', link: [{ resourceType: 'Client', id: 'again' }] }],
    ['/IdentityProvider/again', { type: 'oidc', oidc: { issuer: 'https://sso.example.com', clientId: 'box' }, secret: 'idp-secret' }],
    ['/Webhook/again', { url: 'https://hooks.example.com/box', events: ['io.boxauth.session.closed'], secret: WHSEC }],
  ];

  it('is 200 with the same version and no audit event, for every kind; a secret sent again is kept', async function () {
    for (const [path, body] of BODIES) expect((await api('PUT', path, body)).status, path).to.equal(201);
    const trail = await changes();
    for (const [path, body] of BODIES) {
      const before = (await api('GET', path)).body;
      const again = await api('PUT', path, body);
      expect(again.status, path).to.equal(200);
      expect(again.body.meta.versionId, path).to.equal(before.meta.versionId);
    }
    expect(await changes()).to.deep.equal(trail);
    const token = await box.form('/auth/token', {
      grant_type: 'client_credentials',
      client_id: 'again',
      client_secret: 'the-first-secret-1',
    });
    expect(token.status, token.text).to.equal(200);
  });

  it('a new secret is a change: a new version, an event naming the secret "(changed)", and only the new secret works', async function () {
    const [path, body] = BODIES[0]!;
    const before = (await api('GET', path)).body;
    const trail = await changes();
    const rotated = await api('PUT', path, { ...body, secret: 'the-second-secret-2' });
    expect(rotated.body.meta.versionId).not.to.equal(before.meta.versionId);
    const added = (await events('resource_id=again&_count=10')).filter((e) => !trail.includes(e.id));
    expect(added).to.have.length(1);
    expect(JSON.stringify(added[0]!.detail)).to.include('secret').and.not.include('the-second-secret-2');
    const token = (secret: string): Promise<JsonResponse> =>
      box.form('/auth/token', { grant_type: 'client_credentials', client_id: 'again', client_secret: secret });
    expect((await token('the-first-secret-1')).status).to.equal(401);
    expect((await token('the-second-secret-2')).status).to.equal(200);
  });

  // The secret is checked against its hash before the write's lock (argon2 is slow): a PUT that
  // sends the stored secret again while another PUT changes it must not keep the other's hash
  // under its own answer. Whatever order the writes take, the version the client ends at is one a
  // PUT answered with, and the secret that PUT sent is the one that works.
  it('a secret sent again while other PUTs change it: the version the client ends at is one whose secret works (racing)', async function () {
    const path = '/Client/racing';
    const body = { grant_types: ['client_credentials'], description: 'raced' };
    let current = 'race-secret-start';
    expect((await api('PUT', path, { ...body, secret: current })).status).to.equal(201);
    const works = async (secret: string): Promise<boolean> =>
      (await box.form('/auth/token', { grant_type: 'client_credentials', client_id: 'racing', client_secret: secret })).status === 200;
    for (let round = 0; round < 6; round++) {
      const next = `race-secret-${round}`;
      // Spread over the time a new secret takes to hash, so that some PUTs read the hash before
      // another's commit and take the lock after it.
      const sent = Array.from({ length: 16 }, (_, i) => (i % 2 ? next : current));
      const answers = await Promise.all(
        sent.map(async (secret, i) => {
          await new Promise((resolve) => setTimeout(resolve, i * 7));
          return { secret, res: await api('PUT', path, { ...body, secret }) };
        }),
      );
      for (const { res } of answers) expect(res.status, res.text).to.equal(200);
      const final = (await api('GET', path)).body.meta.versionId;
      const atFinal = new Set(answers.filter((a) => a.res.body.meta.versionId === final).map((a) => a.secret));
      expect([...atFinal], `round ${round}: the PUTs answered with the final version`).to.have.length(1);
      const [winner] = [...atFinal] as [string];
      expect(await works(winner), `round ${round}: ${winner} works`).to.equal(true);
      const loser = winner === next ? current : next;
      expect(await works(loser), `round ${round}: ${loser} does not`).to.equal(false);
      current = winner;
    }
  });

  // `user apply -f` of a file that gives a password sends it with every apply: the password the
  // person has already is kept, so their signed-in browsers stay; another password ends them.
  it("a user's password sent again is kept: no event, and their signed-in browser stays", async function () {
    const created = await api('POST', '/users', { email: 'again@example.com', password: 'a-good-password-1' });
    expect(created.status, created.text).to.equal(201);
    const path = `/users/${created.body.id}`;
    const browser = new FormAgent(box);
    expect((await browser.signIn('again@example.com', 'a-good-password-1')).status).to.equal(303);
    const browsers = async (): Promise<number> => (await api('GET', `${path}/sessions`)).body.browsers.length;
    expect(await browsers()).to.equal(1);
    const trail = await changes();

    const again = await api('PUT', path, { email: 'again@example.com', password: 'a-good-password-1' });
    expect(again.status, again.text).to.equal(200);
    expect(await changes()).to.deep.equal(trail);
    expect(await browsers()).to.equal(1);

    const changed = await api('PUT', path, { email: 'again@example.com', password: 'a-good-password-2' });
    expect(changed.status, changed.text).to.equal(200);
    expect(await browsers()).to.equal(0);
    expect(await changes()).to.have.length(trail.length + 1);
    expect((await new FormAgent(box).signIn('again@example.com', 'a-good-password-2')).status).to.equal(303);
  });
});
