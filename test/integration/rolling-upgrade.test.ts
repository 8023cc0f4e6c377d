// A rolling update as Kubernetes does it: the previous release (scripts/previous-release, built
// by scripts/release-build.sh) serves a box it created and filled; this release starts on the
// same database while the old one serves (migrating it: the expand step), then both serve side by
// side behind one Service, and the old pod restarts against the new schema (a crash, or
// `kubectl rollout undo`). Everything is asserted as a client, an app or a person sees it: what
// either pod issued or wrote works at the other, and what either ended is over at the other.
// The early warning is test/unit/db/migrations.test.ts; this is the proof.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { projectPath } from '../../api/paths.js';
import { Box, basic, eventually, type JsonResponse } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { createDatabase } from '../support/postgres.js';
import { APP_REDIRECT, authorizePath, signedInAt, type SignedIn } from '../support/signed-in.js';

/** The previous release's build: cached (.ci/run builds it before `make test`), else built now. */
async function previousRelease(): Promise<string> {
  const { stdout } = await promisify(execFile)(projectPath('scripts', 'release-build.sh'), { maxBuffer: 1 << 20 });
  return stdout.trim();
}

/** The warnings, errors and 5xx answers a pod logged: why it failed a request. */
const errorsOf = (box: Box): string => box.logs.filter((line) => /"level":"(warn|error|fatal)"|"status":5/.test(line)).join('\n');

/** Within a second: how soon another process sees a change (as in processes.test.ts). */
const withinASecond = (what: string, check: () => Promise<boolean>): Promise<boolean> => eventually(what, check, 1000, 20);

const PASSWORD = 'a-good-password-1';
const WIKI = 'https://wiki.example';

describe('a rolling update from the previous release', function () {
  let old: Box;
  let now: Box;
  let root: string;
  /** Each pod with the other: what one did, the other must honour. */
  let pairs: [string, Box, Box][];

  const token = async (box: Box, client = 'svc', params: Record<string, string> = {}): Promise<JsonResponse> =>
    box.form('/auth/token', { grant_type: 'client_credentials', ...params }, { Authorization: basic(client, `${client}-secret-123`) });
  const accessToken = async (box: Box, client = 'svc'): Promise<string> => {
    const res = await token(box, client);
    expect(res.status, `${client}'s token at ${box.url}: ${res.text}`).to.equal(200);
    return res.body.access_token as string;
  };
  /** A token used on the box's API: its own Client record, as its allow policy lets it read. */
  const used = async (box: Box, bearer: string, client = 'svc'): Promise<number> =>
    (await box.json('GET', `/Client/${client}`, undefined, bearer)).status;
  const introspected = async (box: Box, bearer: string, client = 'svc'): Promise<boolean> =>
    (await box.form('/auth/introspect', { token: bearer }, { Authorization: basic(client, `${client}-secret-123`) })).body
      .active as boolean;
  const refreshed = (box: Box, refreshToken: string): Promise<JsonResponse> =>
    box.form(
      '/auth/token',
      { grant_type: 'refresh_token', refresh_token: refreshToken },
      { Authorization: basic('svc', 'svc-secret-123') },
    );
  /** A person's sign-in at the sign-in page: 303 signed in, 401 refused. */
  const signIn = async (box: Box, email: string): Promise<number> => (await new FormAgent(box).signIn(email, PASSWORD)).status;
  /** A check at the box's Envoy HTTP door for the App `app`. */
  const atGate = (box: Box, app: string, bearer: string): Promise<JsonResponse> =>
    box.request('GET', `/authz/http/${app}/docs/a`, { headers: { Authorization: `Bearer ${bearer}`, Host: `${app}.example` } });

  async function addPerson(box: Box, email: string): Promise<void> {
    const res = await box.json('POST', '/users', { email, password: PASSWORD }, await box.rootToken());
    expect(res.status, `POST /users at ${box.url}: ${res.text}`).to.equal(201);
  }

  async function put(box: Box, path: string, body: unknown): Promise<void> {
    const res = await box.json('PUT', path, body, await box.rootToken());
    expect(res.status, `PUT ${path} at ${box.url}: ${res.text}`).to.be.oneOf([200, 201]);
  }

  /** An App and the policy that lets `indexer` in, written through `box`. */
  async function addApp(box: Box, id: string): Promise<void> {
    await put(box, `/App/${id}`, { urls: [`https://${id}.example`], audience: `https://${id}.example` });
    await put(box, `/AccessPolicy/${id}-indexer`, { app: id, engine: 'allow', link: [{ id: 'indexer', resourceType: 'Client' }] });
  }
  const appToken = async (box: Box, app: string): Promise<string> =>
    (await token(box, 'indexer', { audience: `https://${app}.example` })).body.access_token as string;

  // What the old release held when the update began.
  let issuedBefore: { jwt: string; opaque: string; refreshToken: string; browser: SignedIn };

  before(async function () {
    this.timeout(600_000); // a cold build of the previous release (.ci/run makes it beforehand)
    const release = await previousRelease();
    this.timeout(60_000);
    // The pods' shared settings come from the operator's Secret, whichever release reads them.
    const env = { BOXAUTH_FACTOR_KEY: randomBytes(32).toString('base64') };
    old = await Box.start({ root: release, databaseUrl: await createDatabase('rolling'), env });
    root = await old.rootToken();

    // The box as the old release made and filled it: clients of both token formats (one with
    // rotating refresh tokens), a browser app, an App of the decision point, policies, people.
    await old.addClient(
      'svc',
      { auth: { client_credentials: { token_format: 'jwt', refresh_token: true, refresh_token_rotation: true } } },
      { secret: 'svc-secret-123' },
    );
    await old.addClient('opaque', {}, { secret: 'opaque-secret-123' });
    await old.addClient(
      'app',
      {
        grant_types: ['authorization_code'],
        first_party: true,
        auth: { authorization_code: { redirect_uri: APP_REDIRECT, refresh_token: true } },
      },
      { secret: 'app-secret-123', policy: false },
    );
    await old.addClient(
      'indexer',
      { audience: [WIKI, 'https://docs.example', 'https://notes.example'] },
      { secret: 'indexer-secret-123', policy: false },
    );
    await addApp(old, 'wiki');
    await addPerson(old, 'ada@example.com');
    const issued = await token(old);
    issuedBefore = {
      jwt: issued.body.access_token,
      refreshToken: issued.body.refresh_token,
      opaque: await accessToken(old, 'opaque'),
      browser: await signedInAt(old, 'ada@example.com', PASSWORD),
    };

    // The new pod starts (and migrates) while the old one keeps answering: a token, then its use (0: no answer).
    const answers: number[] = [];
    let starting = true;
    const asking = (async () => {
      while (starting) {
        const issued = await token(old).catch(() => undefined);
        answers.push(issued?.status === 200 ? await used(old, issued.body.access_token).catch(() => 0) : (issued?.status ?? 0));
      }
    })();
    try {
      now = await old.startAnother();
    } finally {
      starting = false;
      await asking;
    }
    expect(answers.length, 'requests the old pod answered while the new one started').to.be.greaterThan(0);
    expect(
      answers.filter((s) => s !== 200),
      `what the old pod answered while the new one migrated; it logged:\n${errorsOf(old)}`,
    ).to.deep.equal([]);
    pairs = [
      ['old → new', old, now],
      ['new → old', now, old],
    ];
  });
  after(async function () {
    await Promise.all([old?.stop(), now?.stop()]);
  });

  it('what the old release issued before the update works at the new one', async function () {
    expect(await used(now, issuedBefore.jwt)).to.equal(200);
    expect(await introspected(now, issuedBefore.jwt)).to.equal(true);
    expect(await used(now, issuedBefore.opaque, 'opaque')).to.equal(200);
    expect(await introspected(now, issuedBefore.opaque, 'opaque')).to.equal(true);
    const res = await refreshed(now, issuedBefore.refreshToken);
    expect(res.status, res.text).to.equal(200);
    // The browser is still signed in: the app gets a code from the new pod without a sign-in page.
    expect((await issuedBefore.browser.browser.at(now).get(authorizePath())).status).to.equal(302);
    expect(await signIn(now, 'ada@example.com')).to.equal(303);
    const wiki = await appToken(old, 'wiki');
    expect((await atGate(now, 'wiki', wiki)).status).to.equal(200);
  });

  it("tokens issued by either pod are used and introspected at the other's", async function () {
    for (const [how, from, at] of pairs) {
      for (const client of ['svc', 'opaque']) {
        const bearer = await accessToken(from, client);
        expect(await used(at, bearer, client), `${how}, ${client}`).to.equal(200);
        expect(await introspected(at, bearer, client), `${how}, ${client}`).to.equal(true);
      }
    }
  });

  it('a refresh token issued by one pod is refreshed at the other, and its rotation holds at both', async function () {
    for (const [how, from, at] of pairs) {
      const first = (await token(from)).body.refresh_token as string;
      const second = await refreshed(at, first);
      expect(second.status, `${how}: ${second.text}`).to.equal(200);
      expect(await used(from, second.body.access_token), how).to.equal(200);
      const third = await refreshed(from, second.body.refresh_token);
      expect(third.status, `${how}: ${third.text}`).to.equal(200);
      // The used one presented again: reuse, and the family is closed at both pods.
      expect((await refreshed(from, first)).status, how).to.equal(400);
      await withinASecond(`${how}: the family closed`, async () => (await used(at, third.body.access_token)) === 401);
    }
  });

  it('a revocation at one pod holds at the other at once', async function () {
    for (const [how, from, at] of pairs) {
      for (const client of ['svc', 'opaque']) {
        const bearer = await accessToken(from, client);
        expect(await used(at, bearer, client), `${how}, ${client}`).to.equal(200); // the other pod knows it now
        const revoked = await from.form('/auth/revoke', { token: bearer }, { Authorization: basic(client, `${client}-secret-123`) });
        expect(revoked.status, revoked.text).to.equal(200);
        await withinASecond(`${how}, ${client}: the revoked token refused`, async () => (await used(at, bearer, client)) === 401);
        expect(await introspected(at, bearer, client), `${how}, ${client}`).to.equal(false);
      }
      const refresh = (await token(from)).body.refresh_token as string;
      await from.form('/auth/revoke', { token: refresh }, { Authorization: basic('svc', 'svc-secret-123') });
      expect((await refreshed(at, refresh)).status, `${how}: a revoked refresh token`).to.equal(400);
    }
  });

  it('a sign-out at one pod ends the browser and its grant at the other at once', async function () {
    let people = 0;
    for (const [how, from, at] of pairs) {
      const email = `leaving-${++people}@example.com`;
      await addPerson(from, email);
      const person = await signedInAt(at, email, PASSWORD);
      expect((await person.browser.at(from).get(authorizePath())).status, `${how}: signed in at both`).to.equal(302);
      const leaving = person.browser.at(from);
      const page = await leaving.get('/auth/sign-out');
      expect((await leaving.post('/auth/sign-out', hiddenFields(page.text))).status, how).to.be.oneOf([200, 303]);
      await withinASecond(`${how}: the access token inactive`, async () => !(await introspected(at, person.accessToken, 'app')));
      expect((await person.browser.get(authorizePath())).status, `${how}: the browser signed out`).to.not.equal(302);
      const refresh = await at.form(
        '/auth/token',
        { grant_type: 'refresh_token', refresh_token: person.refreshToken },
        { Authorization: basic('app', 'app-secret-123') },
      );
      expect(refresh.status, `${how}: the grant's refresh token`).to.equal(400);
    }
  });

  it('Clients, AccessPolicies, Apps and people written through one pod are read and used through the other', async function () {
    for (const [how, from, at] of pairs) {
      const id = how === 'old → new' ? 'docs' : 'notes';
      await put(from, `/Client/${id}-client`, { grant_types: ['client_credentials'], secret: `${id}-client-secret-123`, description: how });
      await put(from, `/AccessPolicy/${id}-client-allow`, { engine: 'allow', link: [{ id: `${id}-client`, resourceType: 'Client' }] });
      const read = await at.json('GET', `/Client/${id}-client`, undefined, root);
      expect(read.status, how).to.equal(200);
      expect(read.body.description, how).to.equal(how);
      const bearer = await eventually(
        `${how}: a token for the new client`,
        async () => (await token(at, `${id}-client`)).body.access_token as string,
      );
      // While both releases serve, the old one hears of the new one's changes when its change feed
      // is cut, a moment after each (docs/operations/upgrades.md): its policies, within a second.
      await withinASecond(`${how}: the policy allowing`, async () => (await used(at, bearer, `${id}-client`)) === 200);

      // A policy removed through one stops allowing at the other.
      await from.json('DELETE', `/AccessPolicy/${id}-client-allow`, undefined, root);
      await withinASecond(`${how}: the removed policy refusing`, async () => (await used(at, bearer, `${id}-client`)) === 403);

      // An App written through one decides at the other's door (what 012's audience column broke).
      await addApp(from, id);
      const app = await appToken(at, id);
      await withinASecond(`${how}: the App deciding`, async () => (await atGate(at, id, app)).status === 200);

      const email = `${id}-person@example.com`;
      await addPerson(from, email);
      expect(await signIn(at, email), `${how}: a person added through the other pod signs in`).to.equal(303);
    }
  });

  it('the old release restarts against the new schema and serves what the new one wrote; so does a rollback', async function () {
    await old.stop();
    await old.launch(); // its migrate() finds migrations it does not know, and goes on
    const bearer = await accessToken(now);
    expect(await used(old, bearer)).to.equal(200);
    expect(await introspected(old, bearer)).to.equal(true);
    // kubectl rollout undo: the new pods go, the old serves alone what they wrote.
    await now.stop();
    expect(await used(old, bearer)).to.equal(200);
    expect(await signIn(old, 'notes-person@example.com')).to.equal(303);
    expect((await old.json('GET', '/Client/notes-client', undefined, root)).status).to.equal(200);
    const app = await appToken(old, 'notes');
    expect((await atGate(old, 'notes', app)).status).to.equal(200);
    const signedIn = await signedInAt(old, 'ada@example.com', PASSWORD);
    expect(await introspected(old, signedIn.accessToken, 'app')).to.equal(true);
  });
});
