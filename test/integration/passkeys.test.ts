// Passkeys over HTTP (docs/guides/passkeys.md), with a software authenticator
// (test/support/authenticator.ts): made on the passkeys page, used alone and as a second
// factor, and the refusals an attacker meets: no CSRF token, a challenge of another browser,
// a challenge used twice (also at once), an expired one, a passkey of one person used in
// another's step, a credential presented with another person's user handle.
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { Box, eventually, type JsonResponse } from '../support/box.js';
import { SoftAuthenticator } from '../support/authenticator.js';
import { codeClient, type CodeClient } from '../support/code-client.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';

const ANN = { email: 'ann@example.com', password: 'ann-password-1' };
const BOB = { email: 'bob@example.com', password: 'bob-password-1' };

describe('passkeys over HTTP', function () {
  this.timeout(60_000);
  let box: Box;
  let db: pg.Client;
  let rp: CodeClient;
  let annKey: SoftAuthenticator;
  let bobKey: SoftAuthenticator;

  before(async function () {
    // An expired challenge by moving the clock; the refusals here stay under the per-address limit.
    box = await Box.start({ movableClock: true, env: { BOXAUTH_SIGN_IN_MAX_FAILURES: '100' } });
    const root = await box.rootToken();
    for (const person of [ANN, BOB]) expect((await box.json('POST', '/users', person, root)).status).to.equal(201);
    rp = await codeClient(box, root, 'https://rp.example/callback');
    db = new pg.Client({ connectionString: box.databaseUrl });
    await db.connect();
    annKey = new SoftAuthenticator(box.url);
    bobKey = new SoftAuthenticator(box.url);
    await addPasskey(await signedIn(ANN), annKey, 'Laptop');
    await addPasskey(await signedIn(BOB), bobKey);
    // From here on, Ann and Bob give their passkey after their password.
  });
  after(async function () {
    await db?.end();
    await box?.stop();
  });

  const authorizePath = (): string => rp.authorizePath();

  /** The claims of the ID token the client gets through the browser's session. */
  async function idTokenOf(agent: FormAgent): Promise<Record<string, unknown>> {
    const answer = await agent.get(authorizePath());
    expect(answer.status, answer.text.slice(0, 300)).to.equal(302);
    return rp.claimsOf(new URL(answer.headers.get('location')!).searchParams.get('code')!);
  }

  /** A browser signed in with a passkey alone. */
  async function signedInWith(key: SoftAuthenticator): Promise<FormAgent> {
    const agent = new FormAgent(box);
    const { options, csrf } = await begin(agent);
    expect((await finish(agent, key.assert(options), csrf)).status).to.equal(200);
    return agent;
  }

  async function signedIn(person: { email: string; password: string }): Promise<FormAgent> {
    const agent = new FormAgent(box);
    expect((await agent.signIn(person.email, person.password)).status).to.equal(303);
    return agent;
  }

  /** The CSRF token of a page this browser loads. */
  async function csrfOf(agent: FormAgent, page = '/auth/sign-in'): Promise<Record<string, string>> {
    return { 'x-csrf-token': hiddenFields((await agent.get(page)).text).csrf! };
  }

  async function addPasskey(agent: FormAgent, key: SoftAuthenticator, name?: string): Promise<JsonResponse> {
    const csrf = await csrfOf(agent, '/auth/account/passkeys');
    const options = await agent.postJson('/auth/passkeys/register/options', {}, csrf);
    expect(options.status, options.text).to.equal(200);
    const res = await agent.postJson('/auth/passkeys/register', { response: key.register(options.body), name }, csrf);
    expect(res.status, res.text).to.equal(200);
    return res;
  }

  /** Options for a sign-in with a passkey, and the headers to answer them with. */
  async function begin(
    agent: FormAgent,
    page = '/auth/sign-in',
  ): Promise<{ options: { challenge: string }; csrf: Record<string, string> }> {
    const csrf = await csrfOf(agent, page);
    const res = await agent.postJson('/auth/passkeys/authenticate/options', {}, csrf);
    expect(res.status, res.text).to.equal(200);
    return { options: res.body, csrf };
  }

  const finish = (agent: FormAgent, response: unknown, csrf: Record<string, string>, returnTo?: string): Promise<JsonResponse> =>
    agent.postJson('/auth/passkeys/authenticate', { response, return_to: returnTo }, csrf);

  const isSignedIn = async (agent: FormAgent, email: string): Promise<boolean> =>
    (await agent.get('/auth/signed-in')).text.includes(`signed in as ${email}`);

  it('the passkeys page lists what was added, named; the options exclude them and name the person by an opaque handle', async function () {
    const agent = await signedInWith(annKey);
    const page = await agent.get('/auth/account/passkeys');
    expect(page.status).to.equal(200);
    expect(page.text).to.include('Laptop').and.include('id="add-passkey"');
    expect(page.headers.get('content-security-policy')).to.include("script-src 'self'");
    const options = await agent.postJson('/auth/passkeys/register/options', {}, await csrfOf(agent, '/auth/account/passkeys'));
    expect(options.body.excludeCredentials.map((c: { id: string }) => c.id)).to.deep.equal([annKey.id]);
    expect(options.body.authenticatorSelection).to.include({ residentKey: 'required', userVerification: 'required' });
    expect(options.body.user.id).to.equal(annKey.userHandle);
    expect(Buffer.from(options.body.user.id, 'base64url').toString('latin1')).not.to.include('ann');
    expect(options.body.rp.id).to.equal('127.0.0.1'); // the base URL's host name
    // Other pages still run no script.
    expect((await agent.get('/auth/signed-in')).headers.get('content-security-policy')).to.include("script-src 'none'");
  });

  it('a passkey alone signs in (discoverable: no credentials named); the ID token says hwk, user, mfa and acr phr', async function () {
    const agent = new FormAgent(box);
    const { options, csrf } = await begin(agent);
    expect((options as { allowCredentials?: unknown[] }).allowCredentials ?? []).to.deep.equal([]);
    const res = await finish(agent, annKey.assert(options), csrf, authorizePath());
    expect(res.status, res.text).to.equal(200);
    expect(res.body.location).to.match(/^\/auth\/authorize\?/);
    const claims = await idTokenOf(agent);
    expect(claims.amr).to.deep.equal(['hwk', 'user', 'mfa']);
    expect(claims.acr).to.equal('phr');
  });

  it('after a password, a person with a passkey gives it as the second factor: amr pwd, hwk, user, mfa', async function () {
    const agent = new FormAgent(box);
    const signIn = await agent.signIn(ANN.email, ANN.password);
    expect(signIn.status).to.equal(303);
    expect(signIn.headers.get('location')).to.match(/^\/auth\/sign-in\/second-factor\?/);
    expect(await isSignedIn(agent, ANN.email)).to.equal(false);
    const { options, csrf } = await begin(agent);
    expect((options as unknown as { allowCredentials: { id: string }[] }).allowCredentials.map((c) => c.id)).to.deep.equal([annKey.id]);
    const res = await finish(agent, annKey.assert(options), csrf);
    expect(res.status, res.text).to.equal(200);
    expect(res.body.location).to.equal('/auth/signed-in');
    const claims = await idTokenOf(agent);
    expect(claims.amr).to.deep.equal(['pwd', 'hwk', 'user', 'mfa']);
    expect(claims.acr).to.equal('phr');
  });

  it('refuses a call without the page’s CSRF token, and one with another browser’s', async function () {
    const agent = new FormAgent(box);
    await agent.get('/auth/sign-in');
    expect((await agent.postJson('/auth/passkeys/authenticate/options', {})).status).to.equal(403);
    const other = new FormAgent(box);
    const otherCsrf = await csrfOf(other);
    expect((await agent.postJson('/auth/passkeys/authenticate/options', {}, otherCsrf)).status).to.equal(403);
    const { options, csrf } = await begin(agent);
    expect((await agent.postJson('/auth/passkeys/authenticate', { response: annKey.assert(options) })).status).to.equal(403);
    expect((await finish(agent, annKey.assert(options), csrf)).status).to.equal(200); // the challenge was not used up by the refusals
  });

  it('a challenge handed to one browser does not sign in another', async function () {
    const victim = new FormAgent(box);
    const { options } = await begin(victim);
    const attacker = new FormAgent(box);
    const csrf = await csrfOf(attacker);
    const res = await finish(attacker, annKey.assert(options), csrf);
    expect(res.status).to.equal(401);
    expect(await isSignedIn(attacker, ANN.email)).to.equal(false);
  });

  it('an assertion replayed, one after the other or twenty at once, signs in once (a synced passkey: its counter stays 0)', async function () {
    const synced = new SoftAuthenticator(box.url, { synced: true, counter: false });
    await addPasskey(await signedInWith(bobKey), synced, 'Phone');
    const agent = new FormAgent(box);
    const { options, csrf } = await begin(agent);
    const assertion = synced.assert(options);
    expect((await finish(agent, assertion, csrf)).status).to.equal(200);
    expect((await finish(agent, assertion, csrf)).status).to.equal(401);

    const racer = new FormAgent(box);
    const raced = await begin(racer);
    const again = synced.assert(raced.options);
    const answers = await Promise.all(Array.from({ length: 20 }, () => finish(racer, again, raced.csrf)));
    expect(answers.map((a) => a.status).sort()).to.deep.equal([200, ...Array<number>(19).fill(401)]);
  });

  it('a counter that did not grow (a cloned key) is refused', async function () {
    const agent = new FormAgent(box);
    const { options, csrf } = await begin(agent);
    const stored = await db.query<{ sign_count: string }>('SELECT sign_count FROM factors WHERE credential_id = $1', [annKey.credentialId]);
    annKey.signCount = Number(stored.rows[0]!.sign_count) - 1; // the clone signs with the counter the original used last
    const res = await finish(agent, annKey.assert(options), csrf);
    expect(res.status).to.equal(401);
    expect(await isSignedIn(agent, ANN.email)).to.equal(false);
  });

  it('an expired challenge is refused', async function () {
    const agent = new FormAgent(box);
    const { options, csrf } = await begin(agent);
    box.advanceClock(6 * 60);
    const res = await finish(agent, annKey.assert(options), csrf);
    expect(res.status).to.equal(401);
  });

  it('attack: Ann’s passkey in Bob’s step (Bob’s password known) does not sign Bob in', async function () {
    const agent = new FormAgent(box);
    expect((await agent.signIn(BOB.email, BOB.password)).headers.get('location')).to.match(/second-factor/);
    const { options, csrf } = await begin(agent);
    const res = await finish(agent, annKey.assert(options), csrf);
    expect(res.status).to.equal(401);
    expect(await isSignedIn(agent, BOB.email)).to.equal(false);
    expect(await isSignedIn(agent, ANN.email)).to.equal(false);
  });

  it('attack: a credential of Ann’s presented with Bob’s user handle signs nobody in', async function () {
    const agent = new FormAgent(box);
    const { options, csrf } = await begin(agent);
    const res = await finish(agent, annKey.assert(options, { userHandle: bobKey.userHandle }), csrf);
    expect(res.status).to.equal(401);
    expect(await isSignedIn(agent, BOB.email)).to.equal(false);
    expect(await isSignedIn(agent, ANN.email)).to.equal(false);
  });

  it('a passkey of another origin is refused', async function () {
    const agent = new FormAgent(box);
    const { options, csrf } = await begin(agent);
    const res = await finish(agent, annKey.assert(options, { origin: 'https://evil.example' }), csrf);
    expect(res.status).to.equal(401);
  });

  it('adding a passkey needs a signed-in person or a step', async function () {
    const agent = new FormAgent(box);
    expect((await agent.postJson('/auth/passkeys/register/options', {}, await csrfOf(agent))).status).to.equal(401);
  });

  it('attack: a passkey made in a second-factor step (Bob’s password known) neither is added nor signs Bob in', async function () {
    const agent = new FormAgent(box);
    expect((await agent.signIn(BOB.email, BOB.password)).headers.get('location')).to.match(/second-factor/);
    const csrf = await csrfOf(agent);
    const options = await agent.postJson('/auth/passkeys/register/options', {}, csrf);
    expect(options.status).to.equal(401);
    // Even with options of the attacker's own signed-in browser, the step's browser cannot add one.
    const mallory = new SoftAuthenticator(box.url);
    const challenge = { challenge: randomBytes(32).toString('base64url'), user: { id: bobKey.userHandle } };
    const res = await agent.postJson('/auth/passkeys/register', { response: mallory.register(challenge) }, csrf);
    expect(res.status).to.equal(401);
    expect(await isSignedIn(agent, BOB.email)).to.equal(false);
    const keys = await db.query("SELECT name FROM factors f JOIN users u ON u.id = f.user_id WHERE u.email = $1 AND kind = 'passkey'", [
      BOB.email,
    ]);
    expect(keys.rows.map((r) => r.name)).to.deep.equal(['Passkey 1', 'Phone']);
  });

  it('a person whose group requires a factor enrols a passkey in the enrolment step, and is signed in with it', async function () {
    const root = await box.rootToken();
    const group = await box.json('POST', '/groups', { name: 'enrollers' }, root);
    await db.query('UPDATE groups SET require_second_factor = true WHERE id = $1', [group.body.id]);
    const dee = { email: 'dee@example.com', password: 'dee-password-1' };
    expect((await box.json('POST', '/users', { ...dee, 'group-ids': [group.body.id] }, root)).status).to.equal(201);
    const agent = new FormAgent(box);
    const signIn = await agent.signIn(dee.email, dee.password, authorizePath());
    expect(signIn.headers.get('location')).to.match(/^\/auth\/sign-in\/enrol\?/);
    const returnTo = new URL(signIn.headers.get('location')!, box.url).searchParams.get('return_to')!;
    const csrf = await csrfOf(agent);
    const options = await agent.postJson('/auth/passkeys/register/options', {}, csrf);
    expect(options.status, options.text).to.equal(200);
    const key = new SoftAuthenticator(box.url);
    const res = await agent.postJson('/auth/passkeys/register', { response: key.register(options.body), return_to: returnTo }, csrf);
    expect(res.status, res.text).to.equal(200);
    expect(res.body.location).to.equal(returnTo);
    const claims = await idTokenOf(agent);
    expect(claims.amr).to.deep.equal(['pwd', 'hwk', 'user', 'mfa']);
    const person = await db.query('SELECT must_enrol FROM users WHERE email = $1', [dee.email]);
    expect(person.rows[0].must_enrol).to.equal(false);
  });

  it('two removals at once of a person’s last two factors, when the group requires one: one is removed, one refused', async function () {
    const root = await box.rootToken();
    const group = await box.json('POST', '/groups', { name: 'racers' }, root);
    await db.query('UPDATE groups SET require_second_factor = true WHERE id = $1', [group.body.id]);
    const rounds = await Promise.all(
      [1, 2, 3, 4].map(async (n) => {
        const person = { email: `racer${n}@example.com`, password: `racer-password-${n}` };
        expect((await box.json('POST', '/users', { ...person, 'group-ids': [group.body.id] }, root)).status).to.equal(201);
        // No factor yet: the password sign-in goes on to enrolment, where the first passkey is added.
        const agent = new FormAgent(box);
        await agent.signIn(person.email, person.password);
        const csrf = await csrfOf(agent);
        const options = await agent.postJson('/auth/passkeys/register/options', {}, csrf);
        expect(
          (await agent.postJson('/auth/passkeys/register', { response: new SoftAuthenticator(box.url).register(options.body) }, csrf))
            .status,
        ).to.equal(200);
        await addPasskey(agent, new SoftAuthenticator(box.url));
        const page = await agent.get('/auth/account/passkeys');
        const ids = [...page.text.matchAll(/name="id" value="(\d+)"/g)].map((m) => m[1]!);
        expect(ids).to.have.length(2);
        const csrfField = hiddenFields(page.text).csrf!;
        const answers = await Promise.all(ids.map((id) => agent.post('/auth/account/passkeys/remove', { csrf: csrfField, id })));
        return answers.map((a) => a.status).sort();
      }),
    );
    for (const statuses of rounds) expect(statuses).to.deep.equal([303, 409]);
  });

  it('removing the last factor of a person whose group requires one is refused; otherwise it is removed', async function () {
    const root = await box.rootToken();
    const cy = { email: 'cy@example.com', password: 'cy-password-1' };
    const group = await box.json('POST', '/groups', { name: 'operators' }, root);
    expect(group.status, group.text).to.equal(201);
    expect((await box.json('POST', '/users', { ...cy, 'group-ids': [group.body.id] }, root)).status).to.equal(201);
    const agent = await signedIn(cy);
    const key = new SoftAuthenticator(box.url);
    await addPasskey(agent, key);
    await db.query('UPDATE groups SET require_second_factor = true WHERE id = $1', [group.body.id]);
    const page = await agent.get('/auth/account/passkeys');
    const id = /name="id" value="(\d+)"/.exec(page.text)![1]!;
    const refused = await agent.post('/auth/account/passkeys/remove', { csrf: hiddenFields(page.text).csrf!, id });
    expect(refused.status).to.equal(409);
    expect(refused.text).to.include('requires a second factor');
    await db.query('UPDATE groups SET require_second_factor = false WHERE id = $1', [group.body.id]);
    const removed = await agent.post('/auth/account/passkeys/remove', { csrf: hiddenFields(page.text).csrf!, id });
    expect(removed.status).to.equal(303);
    expect((await agent.get('/auth/account/passkeys')).text).to.include('You have no passkey yet.');
    // Both are audit events, naming the factor, never its key.
    const factorEvents = await eventually('the factor events', async () => {
      const events = box.logs
        .filter((l) => l.includes('"audit":true'))
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((e) => e.event === 'factor' && e.factor === id);
      return events.length === 2 ? events : undefined;
    });
    expect(factorEvents.map((e) => e.action)).to.deep.equal(['enrolled', 'removed']);
    expect(factorEvents.every((e) => e.kind === 'passkey' && !JSON.stringify(e).includes(key.id))).to.equal(true);
  });

  /** A new person with a password only, and a browser signed in as them. */
  async function newcomer(name: string): Promise<FormAgent> {
    const person = { email: `${name}@example.com`, password: `${name}-password-1` };
    const made = await box.json('POST', '/users', person, await box.rootToken());
    expect(made.status, made.text).to.equal(201);
    return signedIn(person);
  }
  const locationOf = (res: JsonResponse): string => res.headers.get('location') ?? '';

  it('attack: a browser signed in with a password before its person added a passkey may not add or remove one, nor get a code', async function () {
    const old = await newcomer('cid');
    const now = await signedIn({ email: 'cid@example.com', password: 'cid-password-1' });
    await addPasskey(now, new SoftAuthenticator(box.url), 'Phone');
    // The old sign-in proved a password only; the person's own rules now ask for their factor.
    const csrf = await csrfOf(old);
    const options = await old.postJson('/auth/passkeys/register/options', {}, csrf);
    expect(options.status, options.text).to.equal(401);
    expect((await old.get('/auth/account/passkeys')).status).to.equal(303);
    const answer = await old.get(authorizePath());
    expect(locationOf(answer)).not.to.include('code=');
    expect(locationOf(answer)).to.match(/^\/auth\/sign-in\/second-factor\?/);
  });

  it('attack: a sign-out ends the step the browser was in; the next person at it, with its old cookies, cannot enrol into it', async function () {
    const leaving = await newcomer('leaving-dee');
    // The client asks for a passkey; Dee has none: she is in an enrolment step of her signed-in browser.
    const step = await leaving.get(`${authorizePath()}&acr_values=phr`);
    expect(locationOf(step)).to.match(/^\/auth\/sign-in\/enrol\?/);
    const csrf = await csrfOf(leaving);
    const cookiesBefore = leaving.cookieHeader();
    const page = await leaving.get('/auth/sign-out');
    expect((await leaving.post('/auth/sign-out', hiddenFields(page.text))).status).to.be.oneOf([200, 303]);
    const next = await box.request('POST', '/auth/passkeys/register/options', {
      headers: { ...cookiesBefore, ...csrf, 'Content-Type': 'application/json' },
      body: '{}',
    });
    expect(next.status, next.text).to.equal(401);
  });

  it('attack: a step-up "continued" without its proof gives nothing: no fresh sign-in for max_age', async function () {
    const agent = await newcomer('idle-eve');
    const step = await agent.get(`${authorizePath()}&acr_values=${encodeURIComponent('urn:boxauth:acr:mfa')}`);
    expect(locationOf(step)).to.match(/^\/auth\/sign-in\/enrol\?/);
    const { rows: before } = await db.query<{ created_at: Date }>(
      "SELECT b.created_at FROM browser_sessions b JOIN users u ON u.id = b.user_id WHERE u.email = 'idle-eve@example.com'",
    );
    const csrf = hiddenFields((await agent.get(locationOf(step))).text).csrf!;
    const res = await agent.post('/auth/sign-in/continue', { csrf, return_to: '/auth/signed-in' });
    expect(res.status).to.equal(403);
    expect(res.text).to.include('Sign in again');
    const { rows: after } = await db.query<{ created_at: Date }>(
      "SELECT b.created_at FROM browser_sessions b JOIN users u ON u.id = b.user_id WHERE u.email = 'idle-eve@example.com'",
    );
    expect(after).to.deep.equal(before);
  });

  it("attack: a passkey sign-in caught by a reset of its person's factors: the reset wins, nobody is signed in", async function () {
    const person = { email: 'raced@example.com', password: 'raced-password-1' };
    const made = await box.json('POST', '/users', person, await box.rootToken());
    expect(made.status, made.text).to.equal(201);
    const id = made.body.id as number;
    const key = new SoftAuthenticator(box.url);
    await addPasskey(await signedIn(person), key);
    await db.query('DELETE FROM browser_sessions WHERE user_id = $1', [id]);
    // A reset holds the person's row while it removes the factors: here the test holds it, so the
    // sign-in (its assertion checked, its counter moved) waits for the row with the passkey still there.
    const reset = new pg.Client({ connectionString: box.databaseUrl });
    await reset.connect();
    try {
      await reset.query('BEGIN');
      await reset.query('SELECT 1 FROM users WHERE id = $1 FOR UPDATE', [id]);
      const agent = new FormAgent(box);
      const { options, csrf } = await begin(agent);
      const signIn = finish(agent, key.assert(options), csrf);
      await eventually(
        'the sign-in waiting for the person',
        async () =>
          (
            await db.query<{ n: number }>(
              "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FROM users WHERE id%FOR SHARE%'",
            )
          ).rows[0]!.n > 0,
        30_000,
        20,
      );
      await reset.query("DELETE FROM factors WHERE user_id = $1 AND kind = 'passkey'", [id]);
      await reset.query('UPDATE users SET must_enrol = true WHERE id = $1', [id]);
      await reset.query('COMMIT');
      const answer = await signIn;
      const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM browser_sessions WHERE user_id = $1', [id]);
      expect(rows[0]!.n, `the sign-in answered ${answer.status} ${answer.text}`).to.equal(0);
      expect(await isSignedIn(agent, person.email)).to.equal(false);
    } finally {
      await reset.end();
    }
  });

  it('a response naming a challenge that is no base64url (a NUL in it) is a 400, never a 500', async function () {
    const agent = new FormAgent(box);
    const csrf = await csrfOf(agent);
    const clientDataJSON = Buffer.from(JSON.stringify({ type: 'webauthn.get', challenge: 'a\u0000b', origin: box.url })).toString(
      'base64url',
    );
    const response = {
      id: 'AAEC',
      rawId: 'AAEC',
      type: 'public-key',
      response: { clientDataJSON, authenticatorData: 'AA', signature: 'AA' },
    };
    for (const path of ['/auth/passkeys/authenticate', '/auth/passkeys/register']) {
      const res = await agent.postJson(path, { response }, csrf);
      expect(res.status, `${path}: ${res.text}`).to.be.oneOf([400, 401]);
    }
  });
});

describe('passkey sign-ins are throttled like passwords', function () {
  this.timeout(60_000);
  let box: Box;

  before(async function () {
    // One failure per account: four per address (api/credentials/throttle.ts ADDRESS_FACTOR).
    box = await Box.start({ env: { BOXAUTH_SIGN_IN_MAX_FAILURES: '1' } });
  });
  after(async function () {
    await box?.stop();
  });

  it('twenty wrong assertions at once from one address: at most four are checked, the rest and the right one after are 429', async function () {
    const root = await box.rootToken();
    expect((await box.json('POST', '/users', ANN, root)).status).to.equal(201);
    const agent = new FormAgent(box);
    expect((await agent.signIn(ANN.email, ANN.password)).status).to.equal(303);
    const key = new SoftAuthenticator(box.url);
    const csrf = { 'x-csrf-token': hiddenFields((await agent.get('/auth/account/passkeys')).text).csrf! };
    const options = await agent.postJson('/auth/passkeys/register/options', {}, csrf);
    expect((await agent.postJson('/auth/passkeys/register', { response: key.register(options.body) }, csrf)).status).to.equal(200);

    const attacker = new FormAgent(box);
    const attackerCsrf = { 'x-csrf-token': hiddenFields((await attacker.get('/auth/sign-in')).text).csrf! };
    const wrong = await Promise.all(
      Array.from({ length: 20 }, () =>
        attacker.postJson('/auth/passkeys/authenticate', { response: key.assert({ challenge: 'guessed' }) }, attackerCsrf),
      ),
    );
    const statuses = wrong.map((r) => r.status);
    expect(statuses.filter((s) => s === 401).length).to.be.at.most(4);
    expect(statuses.filter((s) => s !== 401).every((s) => s === 429)).to.equal(true);
    const begun = await attacker.postJson('/auth/passkeys/authenticate/options', {}, attackerCsrf);
    const right = await attacker.postJson('/auth/passkeys/authenticate', { response: key.assert(begun.body) }, attackerCsrf);
    expect(right.status).to.equal(429);
  });

  it('a flood of passkey options from one address: each writes a challenge, so past the limit they are 429 and write nothing', async function () {
    // One failure per account: 4 per address, and 40 challenges per address unanswered (api/people/attempts.ts).
    const agent = new FormAgent(box);
    const csrf = { 'x-csrf-token': hiddenFields((await agent.get('/auth/sign-in')).text).csrf! };
    const db = new pg.Client({ connectionString: box.databaseUrl });
    await db.connect();
    try {
      const before = Number((await db.query('SELECT count(*) AS n FROM webauthn_challenges')).rows[0].n);
      const answers = await Promise.all(Array.from({ length: 60 }, () => agent.postJson('/auth/passkeys/authenticate/options', {}, csrf)));
      const statuses = answers.map((r) => r.status);
      expect(statuses.filter((s) => s === 200).length).to.be.at.most(40);
      expect(statuses.filter((s) => s !== 200).every((s) => s === 429)).to.equal(true);
      expect(answers.find((r) => r.status === 429)!.headers.get('retry-after')).to.match(/^\d+$/);
      const after = Number((await db.query('SELECT count(*) AS n FROM webauthn_challenges')).rows[0].n);
      expect(after - before).to.be.at.most(40);
    } finally {
      await db.end();
    }
  });
});
