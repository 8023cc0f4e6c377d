// POST /auth/token: client credentials in the three request forms, the refresh
// grant, the authorization code grant (used once, PKCE), token formats and
// lifetimes, and the RFC 6749 errors.
import { createHash, randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { expect } from 'chai';
import { decodeJwt } from 'jose';
import { Box, basic, eventually } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';

describe('token endpoint', function () {
  let box: Box;

  before(async function () {
    box = await Box.start({ movableClock: true }); // expiries are reached by moving its clock, not by waiting
  });
  after(async function () {
    await box?.stop();
  });

  describe('client_credentials', function () {
    let secret: string;
    before(async function () {
      ({ secret } = await box.addClient('cc-opaque', {}));
      await box.addClient('cc-jwt', { auth: { client_credentials: { token_format: 'jwt', access_token_expiration: 300 } } }, { secret });
    });

    it('answers only token_type and access_token for a plain client (Basic + form)', async function () {
      const res = await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('cc-opaque', secret) });
      expect(res.status).to.equal(200);
      expect(res.body).to.have.keys('token_type', 'access_token');
      expect(res.body.token_type).to.equal('Bearer');
      expect(Buffer.from(res.body.access_token, 'base64url').length).to.be.at.least(32);
      expect(res.headers.get('cache-control')).to.equal('no-store');
    });

    it('accepts credentials in a form body', async function () {
      const res = await box.form('/auth/token', { grant_type: 'client_credentials', client_id: 'cc-opaque', client_secret: secret });
      expect(res.status).to.equal(200);
      expect(res.body.access_token).to.be.a('string');
    });

    it('accepts the JSON form with audience, and puts audience in the JWT aud claim', async function () {
      const res = await box.json('POST', '/auth/token', {
        grant_type: 'client_credentials',
        client_id: 'cc-jwt',
        client_secret: secret,
        audience: 'https://orders.example',
      });
      expect(res.status).to.equal(200);
      expect(res.body).to.have.keys('token_type', 'access_token', 'expires_in');
      expect(res.body.expires_in).to.equal(300);
      const claims = decodeJwt(res.body.access_token);
      expect(claims).to.include({ iss: box.url, sub: 'cc-jwt', aud: 'https://orders.example' });
      expect(claims.exp! - claims.iat!).to.equal(300);
      expect(claims.jti).to.be.a('string');
    });

    it('records one session per token, with the audience', async function () {
      const res = await box.json('POST', '/auth/token', {
        grant_type: 'client_credentials',
        client_id: 'cc-jwt',
        client_secret: secret,
        audience: 'aud-x',
      });
      const jti = decodeJwt(res.body.access_token).jti as string;
      const session = await box.json('GET', `/Session/${jti}`, undefined, await box.rootToken());
      expect(session.status).to.equal(200);
      expect(session.body).to.include({ resourceType: 'Session', id: jti, type: 'client_credentials', audience: 'aud-x', active: true });
      expect(session.body.client).to.deep.equal({ id: 'cc-jwt', resourceType: 'Client' });
      expect(JSON.stringify(session.body)).not.to.include('hash');
    });

    it('refuses a wrong secret with invalid_client, 401 and a Basic challenge', async function () {
      const res = await box.form(
        '/auth/token',
        { grant_type: 'client_credentials' },
        { Authorization: basic('cc-opaque', 'wrong-secret') },
      );
      expect(res.status).to.equal(401);
      expect(res.body.error).to.equal('invalid_client');
      expect(res.body.error_description).to.be.a('string');
      expect(res.headers.get('www-authenticate')).to.match(/^Basic/);
    });

    it('refuses an unknown client exactly like a wrong secret, without a Basic challenge for body credentials', async function () {
      const res = await box.form('/auth/token', { grant_type: 'client_credentials', client_id: 'nobody', client_secret: 'whatever1' });
      expect(res.status).to.equal(401);
      expect(res.body.error).to.equal('invalid_client');
      expect(res.headers.get('www-authenticate')).to.equal(null);
    });

    it('refuses a client whose grant_types lack client_credentials (unauthorized_client)', async function () {
      await box.addClient(
        'implicit-only',
        { grant_types: ['implicit', 'client_credentials'], auth: { implicit: { redirect_uri: 'https://app.example/cb' } } },
        { secret },
      );
      const token = await box.rootToken();
      const put = await box.json(
        'PUT',
        '/Client/implicit-only',
        { grant_types: ['implicit'], auth: { implicit: { redirect_uri: 'https://app.example/cb' } } },
        token,
      );
      expect(put.status).to.equal(200);
      const res = await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('implicit-only', secret) });
      expect(res.status).to.equal(400);
      expect(res.body.error).to.equal('unauthorized_client');
    });

    it('refuses two authentication methods at once', async function () {
      const res = await box.form(
        '/auth/token',
        { grant_type: 'client_credentials', client_secret: secret },
        { Authorization: basic('cc-opaque', secret) },
      );
      expect(res.status).to.equal(400);
      expect(res.body.error).to.equal('invalid_request');
    });

    it('needs a secret: client_id alone is invalid_client', async function () {
      const res = await box.json('POST', '/auth/token', { grant_type: 'client_credentials', client_id: 'cc-opaque' });
      expect(res.status).to.equal(401);
      expect(res.body.error).to.equal('invalid_client');
    });

    it('an expired access token stops working, opaque or JWT', async function () {
      await box.addClient('short', { auth: { client_credentials: { access_token_expiration: 1 } } }, { secret });
      await box.addClient('short-jwt', { auth: { client_credentials: { access_token_expiration: 1, token_format: 'jwt' } } }, { secret });
      const tokens = await Promise.all(
        ['short', 'short-jwt'].map(async (id) => {
          const res = await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic(id, secret) });
          expect(res.body.expires_in).to.equal(1);
          expect((await box.json('GET', `/Client/${id}`, undefined, res.body.access_token)).status).to.equal(200);
          return res.body.access_token as string;
        }),
      );
      box.advanceClock(1.1);
      for (const token of tokens) {
        const after = await box.json('GET', '/Client/short', undefined, token);
        expect(after.status).to.equal(401);
        expect(after.body.error_description).to.match(/expired/);
      }
    });
  });

  describe('refresh_token', function () {
    let secret: string;
    before(async function () {
      ({ secret } = await box.addClient('refresher', {
        auth: {
          client_credentials: { token_format: 'jwt', access_token_expiration: 60, refresh_token: true, refresh_token_expiration: 2 },
        },
      }));
      await box.addClient(
        'rotator',
        {
          auth: { client_credentials: { refresh_token: true, refresh_token_rotation: true } },
        },
        { secret },
      );
    });

    async function issue(client: string): Promise<{ access_token: string; refresh_token: string; expires_in?: number }> {
      const res = await box.json('POST', '/auth/token', { grant_type: 'client_credentials', client_id: client, client_secret: secret });
      expect(res.status).to.equal(200);
      return res.body;
    }

    it('issues a refresh token, and the spec form (client_id + refresh_token) returns a new access token', async function () {
      const first = await issue('refresher');
      expect(first.refresh_token).to.be.a('string');
      const res = await box.json('POST', '/auth/token', {
        grant_type: 'refresh_token',
        client_id: 'refresher',
        refresh_token: first.refresh_token,
      });
      expect(res.status).to.equal(200);
      expect(res.body).to.have.keys('access_token', 'token_type', 'expires_in');
      expect(res.body.access_token).not.to.equal(first.access_token);
      const child = decodeJwt(res.body.access_token);
      const session = await box.json('GET', `/Session/${child.jti}`, undefined, await box.rootToken());
      expect(session.body.type).to.equal('refresh_token');
      expect(session.body.parent.id).to.equal(decodeJwt(first.access_token).jti);
    });

    it('verifies credentials when they are sent', async function () {
      const first = await issue('refresher');
      const bad = await box.form(
        '/auth/token',
        { grant_type: 'refresh_token', refresh_token: first.refresh_token },
        { Authorization: basic('refresher', 'not-the-secret') },
      );
      expect(bad.status).to.equal(401);
      const good = await box.form(
        '/auth/token',
        { grant_type: 'refresh_token', refresh_token: first.refresh_token },
        { Authorization: basic('refresher', secret) },
      );
      expect(good.status).to.equal(200);
    });

    it('a refresh token one character off one the box remembers is unknown', async function () {
      const { refresh_token: token } = await issue('rotator');
      const oneOff = (i: number): string => `${token.slice(0, i)}${token[i] === 'A' ? 'B' : 'A'}${token.slice(i + 1)}`;
      for (const variant of [oneOff(0), oneOff(token.length >> 1), oneOff(token.length - 1)]) {
        const res = await box.json('POST', '/auth/token', { grant_type: 'refresh_token', client_id: 'rotator', refresh_token: variant });
        expect(res.status, variant).to.equal(400);
        expect(res.body.error_description).to.match(/unknown/);
      }
      // Nothing was spent by the neighbours: the token itself still works, once (rotation).
      expect(
        (await box.json('POST', '/auth/token', { grant_type: 'refresh_token', client_id: 'rotator', refresh_token: token })).status,
      ).to.equal(200);
    });

    it('refuses a refresh token of another client', async function () {
      const first = await issue('refresher');
      const res = await box.json('POST', '/auth/token', {
        grant_type: 'refresh_token',
        client_id: 'rotator',
        refresh_token: first.refresh_token,
      });
      expect(res.status).to.equal(400);
      expect(res.body.error).to.equal('invalid_grant');
    });

    it('slides the refresh expiration from the last use, and refuses it once expired', async function () {
      const first = await issue('refresher');
      const refresh = () =>
        box.json('POST', '/auth/token', { grant_type: 'refresh_token', client_id: 'refresher', refresh_token: first.refresh_token });
      box.advanceClock(1.2);
      expect((await refresh()).status).to.equal(200); // 1.2 s after issue
      box.advanceClock(1.2);
      expect((await refresh()).status).to.equal(200); // 2.4 s after issue, 1.2 s after last use
      box.advanceClock(2.1);
      const expired = await refresh();
      expect(expired.status).to.equal(400);
      expect(expired.body.error).to.equal('invalid_grant');
      expect(expired.body.error_description).to.match(/expired/);
    });

    it('rotates the refresh token when configured, and closes the whole family on reuse', async function () {
      const first = await issue('rotator');
      const second = await box.json('POST', '/auth/token', {
        grant_type: 'refresh_token',
        client_id: 'rotator',
        refresh_token: first.refresh_token,
      });
      expect(second.status).to.equal(200);
      expect(second.body.refresh_token).to.be.a('string').and.not.equal(first.refresh_token);
      // The rotated-out token presented again: refused, and every token of the family dies.
      const reuse = await box.json('POST', '/auth/token', {
        grant_type: 'refresh_token',
        client_id: 'rotator',
        refresh_token: first.refresh_token,
      });
      expect(reuse.status).to.equal(400);
      expect(reuse.body.error).to.equal('invalid_grant');
      expect(reuse.body.error_description).to.match(/already used/);
      expect((await box.json('GET', '/Client/rotator', undefined, first.access_token)).status).to.equal(401);
      expect((await box.json('GET', '/Client/rotator', undefined, second.body.access_token)).status).to.equal(401);
      const third = await box.json('POST', '/auth/token', {
        grant_type: 'refresh_token',
        client_id: 'rotator',
        refresh_token: second.body.refresh_token,
      });
      expect(third.status).to.equal(400);
    });

    it('closing the session closes its refresh token', async function () {
      const first = await issue('refresher');
      const signOut = await box.request('DELETE', '/Session', { headers: { Authorization: `Bearer ${first.access_token}` } });
      expect(signOut.status).to.equal(200);
      const res = await box.json('POST', '/auth/token', {
        grant_type: 'refresh_token',
        client_id: 'refresher',
        refresh_token: first.refresh_token,
      });
      expect(res.status).to.equal(400);
      expect(res.body.error).to.equal('invalid_grant');
    });

    it('refuses refresh when the client no longer enables refresh tokens', async function () {
      const { secret: s } = await box.addClient('was-refreshing', { auth: { client_credentials: { refresh_token: true } } });
      const first = (
        await box.json('POST', '/auth/token', { grant_type: 'client_credentials', client_id: 'was-refreshing', client_secret: s })
      ).body;
      await box.json('PUT', '/Client/was-refreshing', { grant_types: ['client_credentials'] }, await box.rootToken());
      const res = await box.json('POST', '/auth/token', {
        grant_type: 'refresh_token',
        client_id: 'was-refreshing',
        refresh_token: first.refresh_token,
      });
      expect(res.status).to.equal(400);
      expect(res.body.error).to.equal('unauthorized_client');
    });
  });

  describe('refresh_token used concurrently (two processes)', function () {
    let busy: Box;
    let secret: string;
    before(async function () {
      busy = await Box.start({ env: { BOXAUTH_WORKERS: '2' } });
      ({ secret } = await busy.addClient('sliding', {
        auth: { client_credentials: { refresh_token: true, refresh_token_expiration: 3600 } },
      }));
      await busy.addClient(
        'rotating',
        {
          auth: { client_credentials: { refresh_token: true, refresh_token_rotation: true } },
        },
        { secret },
      );
    });
    after(async function () {
      await busy?.stop();
    });

    const issue = async (client: string): Promise<{ access_token: string; refresh_token: string }> =>
      (await busy.json('POST', '/auth/token', { grant_type: 'client_credentials', client_id: client, client_secret: secret })).body;
    const refresh = (client: string, token: string) =>
      busy.form('/auth/token', { grant_type: 'refresh_token', refresh_token: token }, { Authorization: basic(client, secret) });
    const introspect = async (client: string, token: string): Promise<boolean> =>
      (await busy.form('/auth/introspect', { token }, { Authorization: basic(client, secret) })).body.active;

    it('without rotation, every one of many simultaneous uses gets its own working access token', async function () {
      const { refresh_token } = await issue('sliding');
      const answers = await Promise.all(Array.from({ length: 40 }, () => refresh('sliding', refresh_token)));
      expect(answers.map((a) => a.status)).to.deep.equal(answers.map(() => 200));
      const tokens = answers.map((a) => a.body.access_token as string);
      expect(new Set(tokens).size).to.equal(tokens.length);
      expect(await Promise.all(tokens.map((t) => introspect('sliding', t)))).to.deep.equal(tokens.map(() => true));
      expect((await refresh('sliding', refresh_token)).status).to.equal(200); // the token stays valid
    });

    it('uses of different refresh tokens at once all succeed', async function () {
      const issued = await Promise.all(Array.from({ length: 20 }, () => issue('sliding')));
      const answers = await Promise.all(issued.flatMap((t) => [refresh('sliding', t.refresh_token), refresh('sliding', t.refresh_token)]));
      expect(answers.map((a) => a.status)).to.deep.equal(answers.map(() => 200));
    });

    it("read together, each token finds its own holder: a client's refresh tokens used at once by it and by another get tokens for it only", async function () {
      // Holders no process remembers are read in one statement (store/refresh-reader.ts): many digests of two
      // clients at once, each token sent by its own client, by the other one authenticated, and by the other named alone.
      const issued = await Promise.all(Array.from({ length: 12 }, (_, i) => issue(i % 2 ? 'rotating' : 'sliding')));
      const other = (i: number): string => (i % 2 ? 'sliding' : 'rotating');
      const own = (i: number): string => (i % 2 ? 'rotating' : 'sliding');
      const named = (client: string, token: string) =>
        busy.form('/auth/token', { grant_type: 'refresh_token', client_id: client, refresh_token: token });
      const [stolen, namedStolen] = await Promise.all([
        Promise.all(issued.map((t, i) => refresh(other(i), t.refresh_token))),
        Promise.all(issued.map((t, i) => named(other(i), t.refresh_token))),
      ]);
      for (const answer of [...stolen, ...namedStolen]) {
        expect(answer.status, answer.text).to.equal(400);
        expect(answer.body.error).to.equal('invalid_grant');
      }
      // The other client's tries spent nothing and closed nothing: each token works once for its own client.
      const answers = await Promise.all(issued.map((t, i) => refresh(own(i), t.refresh_token)));
      expect(answers.map((a) => a.status)).to.deep.equal(answers.map(() => 200));
      expect(await Promise.all(answers.map((a, i) => introspect(own(i), a.body.access_token)))).to.deep.equal(answers.map(() => true));
    });

    for (const rotation of [false, true]) {
      it(`a client deleted while its grants are refreshed at both processes: no use answered after the delete succeeds, none of its sessions stays open (rotation ${rotation ? 'on' : 'off'})`, async function () {
        const root = await busy.rootToken();
        const id = `doomed-${rotation ? 'rotating' : 'sliding'}`;
        await busy.addClient(id, { auth: { client_credentials: { refresh_token: true, refresh_token_rotation: rotation } } }, { secret });
        const grants = await Promise.all(Array.from({ length: 4 }, () => issue(id)));
        let deletedAt = Infinity;
        const lateWins: string[] = [];
        // Loops refreshing each grant (with rotation one chain a grant, else several loops a token) until refused.
        const loop = async (token: string): Promise<void> => {
          for (;;) {
            const sent = performance.now();
            const res = await refresh(id, token);
            if (res.status !== 200) return;
            if (sent > deletedAt) lateWins.push(res.text);
            if (rotation) token = res.body.refresh_token as string;
          }
        };
        const loops = Promise.all(grants.flatMap((g) => Array.from({ length: rotation ? 1 : 3 }, () => loop(g.refresh_token))));
        await new Promise((resolve) => setTimeout(resolve, 100));
        const removed = await busy.json('DELETE', `/Client/${id}`, undefined, root);
        expect(removed.status, removed.text).to.be.oneOf([200, 204]);
        deletedAt = performance.now();
        await loops;
        expect(lateWins).to.deep.equal([]);
        const open = await busy.json('GET', `/Session?client=${id}&active=true`, undefined, root);
        expect(open.body.total, open.text).to.equal(0);
      });
    }

    it('with rotation, exactly one of simultaneous uses succeeds, and the family is closed', async function () {
      const first = await issue('rotating');
      const answers = await Promise.all(Array.from({ length: 10 }, () => refresh('rotating', first.refresh_token)));
      const won = answers.filter((a) => a.status === 200);
      expect(won).to.have.length(1);
      for (const lost of answers.filter((a) => a.status !== 200)) {
        expect(lost.status).to.equal(400);
        expect(lost.body.error).to.equal('invalid_grant');
        expect(lost.body.error_description).to.match(/already used/);
      }
      // A reuse closed the family, the winner's new tokens included.
      expect(await introspect('rotating', won[0]!.body.access_token)).to.equal(false);
      expect(await introspect('rotating', first.access_token)).to.equal(false);
      const next = await refresh('rotating', won[0]!.body.refresh_token);
      expect(next.status).to.equal(400);
      expect(next.body.error).to.equal('invalid_grant');
    });

    it('rotation one use at a time keeps working down the chain', async function () {
      let { refresh_token: token } = await issue('rotating');
      for (let i = 0; i < 5; i++) {
        const res = await refresh('rotating', token);
        expect(res.status).to.equal(200);
        expect(await introspect('rotating', res.body.access_token)).to.equal(true);
        token = res.body.refresh_token;
      }
    });
  });

  describe('authorization_code, at two processes of one box', function () {
    const cb = 'https://app.example/cb';
    const person = { email: 'coder@example.com', password: 'coder-password-1' };
    const webSecret = 'web-app-secret-1';
    let other: Box;
    let browser: FormAgent;

    before(async function () {
      other = await box.startAnother();
      const root = await box.rootToken();
      const code = { authorization_code: { redirect_uri: cb } };
      for (const [id, client] of Object.entries({
        'web-app': { secret: webSecret, first_party: true, auth: code },
        'spa-app': { first_party: true, auth: code },
      })) {
        const res = await box.json('PUT', `/Client/${id}`, { grant_types: ['authorization_code'], ...client }, root);
        expect(res.status, res.text).to.equal(201);
      }
      expect((await box.json('POST', '/users', person, root)).status).to.equal(201);
      browser = new FormAgent(box);
      expect((await browser.signIn(person.email, person.password)).status).to.equal(303);
    });
    after(async function () {
      await other?.stop();
    });

    /** A code for `client`, from the signed-in browser (first-party clients: no consent); `challenge` for PKCE. */
    async function codeFor(client: string, challenge?: string): Promise<string> {
      const pkce: Record<string, string> = challenge ? { code_challenge: challenge, code_challenge_method: 'S256' } : {};
      const res = await browser.get(
        `/auth/authorize?${new URLSearchParams({ response_type: 'code', client_id: client, redirect_uri: cb, ...pkce })}`,
      );
      expect(res.status, res.text.slice(0, 300)).to.equal(302);
      return new URL(res.headers.get('location')!).searchParams.get('code')!;
    }
    const redeemAt = (at: Box, code: string) =>
      at.form('/auth/token', { grant_type: 'authorization_code', code, redirect_uri: cb }, { Authorization: basic('web-app', webSecret) });
    const redeemPublic = (code: string, verifier?: string) =>
      box.form('/auth/token', {
        grant_type: 'authorization_code',
        code,
        redirect_uri: cb,
        client_id: 'spa-app',
        ...(verifier !== undefined ? { code_verifier: verifier } : {}),
      });
    const active = async (at: Box, token: string): Promise<boolean> =>
      (await at.form('/auth/introspect', { token }, { Authorization: basic('web-app', webSecret) })).body.active;
    /** Until neither process takes `token` (the other one hears of a close through the change feed). */
    const revokedEverywhere = (token: string) =>
      eventually('the token revoked at both processes', async () => !(await active(box, token)) && !(await active(other, token)));
    const expectSpent = (res: { status: number; body: { error?: string; error_description?: string } }): void => {
      expect(res.status).to.equal(400);
      expect(res.body.error).to.equal('invalid_grant');
      expect(res.body.error_description).to.match(/already used/);
    };

    it('a code is used once: exchanged again, at either process, it is refused and the tokens it gave are revoked', async function () {
      const code = await codeFor('web-app');
      const first = await redeemAt(box, code);
      expect(first.status, first.text).to.equal(200);
      expect(await active(box, first.body.access_token)).to.equal(true);
      expectSpent(await redeemAt(other, code));
      // RFC 6749 §4.1.2: the code was probably stolen, so what it obtained ends.
      expect(await active(other, first.body.access_token)).to.equal(false);
      await revokedEverywhere(first.body.access_token);
      expectSpent(await redeemAt(box, code));
    });

    it('many simultaneous exchanges of one code at two processes: exactly one gets tokens, and the replays revoke them', async function () {
      for (let round = 0; round < 3; round++) {
        const code = await codeFor('web-app');
        const answers = await Promise.all(Array.from({ length: 16 }, (_, i) => redeemAt(i % 2 ? other : box, code)));
        const won = answers.filter((a) => a.status === 200);
        expect(won, `round ${round}: ${answers.map((a) => a.status).join(' ')}`).to.have.length(1);
        for (const lost of answers.filter((a) => a.status !== 200)) expectSpent(lost);
        await revokedEverywhere(won[0]!.body.access_token);
      }
    });

    describe('PKCE at the token endpoint (RFC 7636 §4.6)', function () {
      const verifier = randomBytes(32).toString('base64url');
      const challenge = createHash('sha256').update(verifier).digest('base64url');

      it('the right code_verifier gets the tokens', async function () {
        const res = await redeemPublic(await codeFor('spa-app', challenge), verifier);
        expect(res.status, res.text).to.equal(200);
      });

      for (const [label, sent, reason] of [
        ['no code_verifier', undefined, /code_verifier is required/],
        ['another code_verifier', randomBytes(32).toString('base64url'), /does not match/],
        ['the challenge itself as the verifier (the plain method)', challenge, /does not match/],
      ] as const) {
        it(`${label}: invalid_grant, and the code is spent for its holder too`, async function () {
          const code = await codeFor('spa-app', challenge);
          const refused = await redeemPublic(code, sent);
          expect(refused.status, refused.text).to.equal(400);
          expect(refused.body.error).to.equal('invalid_grant');
          expect(refused.body.error_description).to.match(reason);
          expectSpent(await redeemPublic(code, verifier));
        });
      }

      it('a code_verifier for a code asked without a challenge is refused', async function () {
        const code = await codeFor('web-app');
        const res = await box.form(
          '/auth/token',
          { grant_type: 'authorization_code', code, redirect_uri: cb, code_verifier: verifier },
          { Authorization: basic('web-app', webSecret) },
        );
        expect(res.status, res.text).to.equal(400);
        expect(res.body.error_description).to.match(/had no code_challenge/);
      });

      it('the plain method is refused at the authorization endpoint, for a confidential client too, and no code is issued', async function () {
        for (const client of ['spa-app', 'web-app']) {
          const res = await browser.get(
            `/auth/authorize?${new URLSearchParams({ response_type: 'code', client_id: client, redirect_uri: cb, code_challenge: verifier, code_challenge_method: 'plain' })}`,
          );
          expect(res.status, client).to.equal(302);
          const back = new URL(res.headers.get('location')!);
          expect(back.searchParams.get('error'), client).to.equal('invalid_request');
          expect(back.searchParams.get('error_description')).to.match(/S256/);
          expect(back.searchParams.get('code'), client).to.equal(null);
        }
      });
    });
  });

  it('token answers are not cached, and carry the security and CORS headers of every answer', async function () {
    for (const res of [
      await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('root', box.rootSecret) }),
      await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('root', 'wrong-secret') }),
    ]) {
      expect(res.headers.get('cache-control')).to.equal('no-store');
      expect(res.headers.get('content-type')).to.equal('application/json; charset=utf-8');
      expect(res.headers.get('x-content-type-options')).to.equal('nosniff');
      expect(res.headers.get('access-control-allow-origin')).to.equal('*');
    }
  });

  describe('malformed requests', function () {
    it('unsupported grant type', async function () {
      const res = await box.form('/auth/token', { grant_type: 'password', username: 'a', password: 'b' });
      expect(res.status).to.equal(400);
      expect(res.body.error).to.equal('unsupported_grant_type');
    });

    it('missing grant_type', async function () {
      const res = await box.json('POST', '/auth/token', { client_id: 'x' });
      expect(res.status).to.equal(400);
      expect(res.body.error).to.equal('invalid_request');
    });

    it('malformed JSON', async function () {
      const res = await box.request('POST', '/auth/token', { headers: { 'Content-Type': 'application/json' }, body: '{"grant_type": ' });
      expect(res.status).to.equal(400);
      expect(res.body.error).to.equal('invalid_request');
    });

    it('a wrong content type', async function () {
      const res = await box.request('POST', '/auth/token', {
        headers: { 'Content-Type': 'text/plain' },
        body: 'grant_type=client_credentials',
      });
      expect(res.status).to.equal(400);
      expect(res.body.error).to.equal('invalid_request');
      expect(res.body.error_description).to.match(/x-www-form-urlencoded/);
    });

    it('non-string parameters and repeated parameters', async function () {
      const json = await box.json('POST', '/auth/token', { grant_type: ['client_credentials'] });
      expect(json.status).to.equal(400);
      const form = await box.request('POST', '/auth/token', {
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: 'grant_type=client_credentials&grant_type=refresh_token',
      });
      expect(form.status).to.equal(400);
      expect(form.body.error).to.equal('invalid_request');
    });

    it('an oversized body is 413, and too many parameters are refused', async function () {
      const big = await box.request('POST', '/auth/token', {
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: `grant_type=client_credentials&pad=${'x'.repeat(300 * 1024)}`,
      });
      expect(big.status).to.equal(413);
      expect(big.body.error_description).to.match(/262144 bytes/);
      const many = await box.request('POST', '/auth/token', {
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: ['grant_type=client_credentials', ...Array.from({ length: 120 }, (_, i) => `p${i}=1`)].join('&'),
      });
      expect(many.status).to.equal(400);
      expect(many.body.error).to.equal('invalid_request');
    });

    it('a gzip-compressed form is understood', async function () {
      const res = await fetch(`${box.url}/auth/token`, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/x-www-form-urlencoded',
          'Content-Encoding': 'gzip',
          Authorization: basic('root', box.rootSecret),
        },
        body: gzipSync('grant_type=client_credentials'),
      });
      expect(res.status).to.equal(200);
      expect(((await res.json()) as { access_token?: string }).access_token).to.be.a('string');
    });

    it('a refresh request without refresh_token', async function () {
      const res = await box.json('POST', '/auth/token', { grant_type: 'refresh_token', client_id: 'root' });
      expect(res.status).to.equal(400);
      expect(res.body.error).to.equal('invalid_request');
    });

    it('an unknown refresh token', async function () {
      const res = await box.json('POST', '/auth/token', { grant_type: 'refresh_token', client_id: 'root', refresh_token: 'nope' });
      expect(res.status).to.equal(400);
      expect(res.body.error).to.equal('invalid_grant');
    });
  });
});
