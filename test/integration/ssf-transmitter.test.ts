// The Shared Signals transmitter (SSF 1.0, CAEP 1.0, RISC 1.0) over HTTP, as a receiver sees it: the
// public metadata, every endpoint of the stream management API and its errors, a receiver's push
// endpoint (a node:http server here) getting Security Event Tokens it verifies with jose against the
// box's JWKS, each event caused by the real action (a sign-out, a new password, a person turned off
// and on, deleted), whose events a receiver may have decided by policy (deny by default), another
// receiver's stream and another box's token refused, push URLs the box must not reach refused, a
// flood of stream creation, a poll stream with its acknowledgements, and a person's browser session
// stepping up (assurance-level-change).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify, type JWTPayload } from 'jose';
import { Box, basic, eventually } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { signedInAt } from '../support/signed-in.js';
import { appOnAccountPage, totpCode } from '../support/totp.js';

const SESSION_REVOKED = 'https://schemas.openid.net/secevent/caep/event-type/session-revoked';
const CREDENTIAL_CHANGE = 'https://schemas.openid.net/secevent/caep/event-type/credential-change';
const ASSURANCE_LEVEL_CHANGE = 'https://schemas.openid.net/secevent/caep/event-type/assurance-level-change';
const VERIFICATION = 'https://schemas.openid.net/secevent/ssf/event-type/verification';
const ACCOUNT_DISABLED = 'https://schemas.openid.net/secevent/risc/event-type/account-disabled';
const ACCOUNT_ENABLED = 'https://schemas.openid.net/secevent/risc/event-type/account-enabled';
const ACCOUNT_PURGED = 'https://schemas.openid.net/secevent/risc/event-type/account-purged';
const PUSH = 'urn:ietf:rfc:8935';
const POLL = 'urn:ietf:rfc:8936';
const ALL_EVENTS = [SESSION_REVOKED, CREDENTIAL_CHANGE, ACCOUNT_DISABLED, ACCOUNT_ENABLED, ACCOUNT_PURGED];
const REDIRECT = 'https://app.example/cb';

interface Push {
  authorization: string | undefined;
  contentType: string | undefined;
  token: string;
}

/** A receiver's push endpoint (RFC 8935): records every push and answers 202. */
class Receiver {
  readonly pushes: Push[] = [];
  private server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      this.pushes.push({
        authorization: req.headers.authorization,
        contentType: req.headers['content-type'],
        token: Buffer.concat(chunks).toString(),
      });
      res.writeHead(202).end();
    });
  });

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/events`;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

describe('Shared Signals transmitter (SSF 1.0)', function () {
  this.timeout(120_000);
  let box: Box;
  let root: string;
  let receiver: Receiver;
  let pushUrl: string;
  let jwks: ReturnType<typeof createRemoteJWKSet>;

  /** A receiver client with its own policies: the stream API, and the events of people whose address is `events`. */
  async function receiverToken(id: string, opts: { streams?: boolean; events?: string; scope?: string } = {}): Promise<string> {
    const secret = `${id}-secret-123`;
    await box.addClient(id, { grant_types: ['client_credentials'], scope: ['ssf.read', 'ssf.manage'] }, { secret, policy: false });
    if (opts.streams !== false)
      await box.json(
        'PUT',
        `/AccessPolicy/${id}-streams`,
        { engine: 'matcho', link: [{ id, resourceType: 'Client' }], matcho: { uri: '#^/ssf/' } },
        root,
      );
    if (opts.events)
      await box.json(
        'PUT',
        `/AccessPolicy/${id}-events`,
        {
          engine: 'matcho',
          link: [{ id, resourceType: 'Client' }],
          matcho: { ssf: { subject: { email: opts.events } } },
        },
        root,
      );
    const token = await box.form(
      '/auth/token',
      { grant_type: 'client_credentials', scope: opts.scope ?? 'ssf.read ssf.manage' },
      { Authorization: basic(id, secret) },
    );
    expect(token.status, token.text).to.equal(200);
    return token.body.access_token as string;
  }

  async function person(email: string): Promise<number> {
    const made = await box.json('POST', '/users', { email, password: 'a-good-password-1' }, root);
    expect(made.status, made.text).to.equal(201);
    return made.body.id as number;
  }

  /** The SET pushed to `receiver` whose event is `type` (and, when given, about person `user`), verified. */
  async function pushed(
    type: string,
    audience: string,
    user?: number,
    authorization?: string,
  ): Promise<{ claims: JWTPayload; push: Push }> {
    return eventually(`a ${type} SET`, async () => {
      for (const push of receiver.pushes) {
        const { payload } = await jwtVerify(push.token, jwks, { issuer: box.url, audience, typ: 'secevent+jwt' });
        const events = payload.events as Record<string, Record<string, unknown>>;
        if (!(type in events)) continue;
        if (user !== undefined && JSON.stringify(payload.sub_id).indexOf(`"sub":"${user}"`) < 0) continue;
        if (authorization !== undefined && push.authorization !== authorization) continue;
        return { claims: payload, push };
      }
      return undefined;
    });
  }

  const stream = (token: string, body: Record<string, unknown>) => box.json('POST', '/ssf/streams', body, token);
  const pushStream = (extra: Record<string, unknown> = {}) => ({
    events_requested: ALL_EVENTS,
    delivery: { method: PUSH, endpoint_url: pushUrl, authorization_header: 'Bearer push-secret-1' },
    ...extra,
  });

  before(async function () {
    receiver = new Receiver();
    pushUrl = await receiver.start();
    // People's sub is their row id here, as a box that had people before release 036 says it (subjects.test.ts: the others).
    box = await Box.start({ env: { BOXAUTH_NOTICE_ALLOWED_ADDRESSES: '127.0.0.1/32', BOXAUTH_PUBLIC_SUBJECTS: 'sequential' } });
    root = await box.rootToken();
    jwks = createRemoteJWKSet(new URL(`${box.url}/.well-known/jwks.json`));
    await box.addClient(
      'app',
      {
        grant_types: ['authorization_code'],
        first_party: true,
        auth: { authorization_code: { redirect_uri: REDIRECT, refresh_token: true } },
      },
      { secret: 'app-secret-123', policy: false },
    );
  });
  after(async function () {
    await box?.stop();
    await receiver?.stop();
  });

  describe('metadata (SSF 1.0 §7)', function () {
    it('is public, its issuer the base URL exactly, with every endpoint, push and poll', async function () {
      const res = await box.json('GET', '/.well-known/ssf-configuration');
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.include({
        issuer: box.url,
        jwks_uri: `${box.url}/.well-known/jwks.json`,
        delivery_methods_supported: [PUSH, POLL],
        configuration_endpoint: `${box.url}/ssf/streams`,
        status_endpoint: `${box.url}/ssf/status`,
        add_subject_endpoint: `${box.url}/ssf/subjects/add`,
        remove_subject_endpoint: `${box.url}/ssf/subjects/remove`,
        verification_endpoint: `${box.url}/ssf/verify`,
        authorization_schemes: [{ spec_urn: 'urn:ietf:rfc:6749' }],
        default_subjects: 'ALL',
      });
      expect(res.body.spec_version).to.be.a('string');
    });
  });

  describe('the stream management API (SSF 1.0 §8.1)', function () {
    let token: string;
    before(async function () {
      token = await receiverToken('rx-crud');
    });

    it('creates (201), reads one and all (200), updates, replaces (200) and deletes (204) a stream', async function () {
      const made = await stream(token, pushStream({ description: 'first' }));
      expect(made.status, made.text).to.equal(201);
      expect(made.body).to.deep.include({
        iss: box.url,
        aud: 'rx-crud',
        description: 'first',
        events_requested: ALL_EVENTS,
        events_delivered: ALL_EVENTS,
      });
      expect(made.body.delivery).to.deep.equal({ method: PUSH, endpoint_url: pushUrl }); // the receiver's secret is never answered
      const id = made.body.stream_id as string;

      const one = await box.json('GET', `/ssf/streams?stream_id=${id}`, undefined, token);
      expect(one.status).to.equal(200);
      expect(one.body.stream_id).to.equal(id);
      const all = await box.json('GET', '/ssf/streams', undefined, token);
      expect(all.status).to.equal(200);
      expect(all.body.map((s: { stream_id: string }) => s.stream_id)).to.include(id);

      const patched = await box.json('PATCH', '/ssf/streams', { stream_id: id, description: 'patched' }, token);
      expect(patched.status, patched.text).to.equal(200);
      expect(patched.body).to.deep.include({ description: 'patched', events_requested: ALL_EVENTS });
      const replaced = await box.json(
        'PUT',
        '/ssf/streams',
        { stream_id: id, events_requested: [SESSION_REVOKED, 'urn:example:unknown'], delivery: { method: POLL } },
        token,
      );
      expect(replaced.status, replaced.text).to.equal(200);
      expect(replaced.body).to.not.have.property('description');
      expect(replaced.body.events_delivered).to.deep.equal([SESSION_REVOKED]);
      expect(replaced.body.delivery).to.deep.equal({ method: POLL, endpoint_url: `${box.url}/ssf/poll/${id}` });

      const status = await box.json('GET', `/ssf/status?stream_id=${id}`, undefined, token);
      expect(status.status).to.equal(200);
      expect(status.body).to.deep.equal({ stream_id: id, status: 'enabled' });
      const paused = await box.json('POST', '/ssf/status', { stream_id: id, status: 'paused', reason: 'maintenance' }, token);
      expect(paused.status).to.equal(200);
      expect(paused.body).to.deep.equal({ stream_id: id, status: 'paused', reason: 'maintenance' });

      expect((await box.json('DELETE', `/ssf/streams?stream_id=${id}`, undefined, token)).status).to.equal(204);
      expect((await box.json('GET', `/ssf/streams?stream_id=${id}`, undefined, token)).status).to.equal(404);
    });

    it('answers 404 for an unknown stream at every endpoint', async function () {
      const id = 'no-such-stream';
      expect((await box.json('GET', `/ssf/streams?stream_id=${id}`, undefined, token)).status).to.equal(404);
      expect((await box.json('PATCH', '/ssf/streams', { stream_id: id, description: 'x' }, token)).status).to.equal(404);
      expect((await box.json('PUT', '/ssf/streams', { stream_id: id }, token)).status).to.equal(404);
      expect((await box.json('DELETE', `/ssf/streams?stream_id=${id}`, undefined, token)).status).to.equal(404);
      expect((await box.json('GET', `/ssf/status?stream_id=${id}`, undefined, token)).status).to.equal(404);
      expect((await box.json('POST', '/ssf/status', { stream_id: id, status: 'enabled' }, token)).status).to.equal(404);
      expect((await box.json('POST', '/ssf/verify', { stream_id: id }, token)).status).to.equal(404);
      expect(
        (await box.json('POST', '/ssf/subjects/add', { stream_id: id, subject: { format: 'email', email: 'a@example.com' } }, token))
          .status,
      ).to.equal(404);
    });

    it('answers 400 for a broken body, 401 without a good token', async function () {
      const broken = await box.request('POST', '/ssf/streams', {
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
        body: ';{ broken',
      });
      expect(broken.status).to.equal(400);
      expect((await stream(token, { delivery: { method: 'urn:example:carrier-pigeon' } })).status).to.equal(400);
      expect((await stream(token, { events_requested: 'all' })).status).to.equal(400);
      expect((await box.json('PATCH', '/ssf/streams', { description: 'no id' }, token)).status).to.equal(400);
      const noToken = await box.json('POST', '/ssf/streams', pushStream());
      expect(noToken.status).to.equal(401);
      const badToken = await box.json('GET', '/ssf/streams', undefined, 'not-a-token');
      expect(badToken.status).to.equal(401);
      expect(badToken.headers.get('www-authenticate')).to.match(/invalid_token/);
    });

    it('refuses a receiver no policy lets use the API, and a token without ssf.manage to change', async function () {
      const unlisted = await receiverToken('rx-no-policy', { streams: false });
      expect((await stream(unlisted, pushStream())).status).to.equal(403);
      const reader = await receiverToken('rx-reader', { scope: 'ssf.read' });
      expect((await box.json('GET', '/ssf/streams', undefined, reader)).status).to.equal(200);
      const refused = await stream(reader, pushStream());
      expect(refused.status).to.equal(403);
      expect(refused.body.error).to.equal('insufficient_scope');
    });

    it("shows a receiver only its own streams: another receiver's is not found", async function () {
      const mine = (await stream(token, pushStream())).body.stream_id as string;
      const other = await receiverToken('rx-other');
      expect((await box.json('GET', `/ssf/streams?stream_id=${mine}`, undefined, other)).status).to.equal(404);
      expect((await box.json('DELETE', `/ssf/streams?stream_id=${mine}`, undefined, other)).status).to.equal(404);
      expect((await box.json('POST', '/ssf/verify', { stream_id: mine }, other)).status).to.equal(404);
      expect((await box.json('GET', '/ssf/streams', undefined, other)).body).to.deep.equal([]);
      expect((await box.json('GET', `/ssf/streams?stream_id=${mine}`, undefined, token)).status).to.equal(200);
      await box.json('DELETE', `/ssf/streams?stream_id=${mine}`, undefined, token);
    });

    it('ends the streams of a receiver deleted: a client made again with its id starts with none', async function () {
      const first = await receiverToken('rx-again');
      const made = await stream(first, pushStream());
      expect(made.status, made.text).to.equal(201);
      expect((await box.json('DELETE', '/Client/rx-again', undefined, root)).status).to.be.oneOf([200, 204]);
      const again = await receiverToken('rx-again');
      expect((await box.json('GET', '/ssf/streams', undefined, again)).body).to.deep.equal([]);
      expect((await box.json('GET', `/ssf/streams?stream_id=${made.body.stream_id as string}`, undefined, again)).status).to.equal(404);
    });

    it("refuses another box's token", async function () {
      const other = await Box.start();
      try {
        await other.addClient(
          'rx-crud',
          { grant_types: ['client_credentials'], scope: ['ssf.read', 'ssf.manage'] },
          { secret: 'rx-crud-secret-123' },
        );
        const foreign = await other.form(
          '/auth/token',
          { grant_type: 'client_credentials', scope: 'ssf.read ssf.manage' },
          { Authorization: basic('rx-crud', 'rx-crud-secret-123') },
        );
        expect(foreign.status).to.equal(200);
        expect((await box.json('GET', '/ssf/streams', undefined, foreign.body.access_token)).status).to.equal(401);
      } finally {
        await other.stop();
      }
    });

    it('refuses push endpoints the box must not reach: loopback, private ranges, the box itself, credentials in the URL', async function () {
      for (const url of [
        'http://127.0.0.2:9/events',
        'https://10.0.0.1/events',
        'https://169.254.169.254/latest',
        'https://[::1]/events',
        `${box.url}/ssf/streams`,
        'https://user:pass@receiver.example/events',
        'ftp://receiver.example/events',
      ]) {
        const res = await stream(token, { delivery: { method: PUSH, endpoint_url: url } });
        expect(res.status, `${url}: ${res.text}`).to.equal(400);
        expect(res.body.error_description).to.match(/endpoint_url/);
      }
      const made = (await stream(token, pushStream())).body.stream_id as string;
      const changed = await box.json(
        'PATCH',
        '/ssf/streams',
        { stream_id: made, delivery: { method: PUSH, endpoint_url: 'https://10.1.2.3/' } },
        token,
      );
      expect(changed.status).to.equal(400);
      await box.json('DELETE', `/ssf/streams?stream_id=${made}`, undefined, token);
    });

    it('refuses a flood of stream creation: a receiver gets at most its number of streams, the rest 409', async function () {
      const flooder = await receiverToken('rx-flood');
      const answers = await Promise.all(Array.from({ length: 30 }, () => stream(flooder, { delivery: { method: POLL } })));
      const made = answers.filter((a) => a.status === 201).length;
      expect(made).to.equal(10);
      const refused = answers.filter((a) => a.status === 409);
      expect(refused).to.have.length(20);
      expect(refused[0]!.body.error_description).to.match(/10 streams/);
      expect((await box.json('GET', '/ssf/streams', undefined, flooder)).body).to.have.length(10);
    });

    it('names no stream in the metrics: a receiver making and deleting streams makes no new series, its client is the destination', async function () {
      const churner = await receiverToken('rx-churn');
      // A push endpoint of its own: the other tests' receiver takes only their SETs.
      const churnReceiver = new Receiver();
      const churnUrl = await churnReceiver.start();
      try {
        const ids: string[] = [];
        for (let i = 0; i < 4; i++) {
          const made = await stream(churner, { events_requested: ALL_EVENTS, delivery: { method: PUSH, endpoint_url: churnUrl } });
          expect(made.status, made.text).to.equal(201);
          const id = made.body.stream_id as string;
          ids.push(id);
          // Every other stream is disabled, so that its verification is given up; the others' are sent.
          if (i % 2 === 0)
            expect((await box.json('POST', '/ssf/status', { stream_id: id, status: 'disabled' }, churner)).status).to.equal(200);
          expect((await box.json('POST', '/ssf/verify', { stream_id: id, state: `churn-${i}` }, churner)).status).to.equal(204);
          if (i % 2 === 1)
            await eventually(`verification churn-${i} pushed`, async () =>
              churnReceiver.pushes.some((p) => JSON.stringify(decodePayload(p.token)).includes(`"churn-${i}"`)),
            );
          else await eventually(`verification churn-${i} given up`, async () => (await box.metrics()).includes('result="given_up"'));
          expect((await box.json('DELETE', `/ssf/streams?stream_id=${id}`, undefined, churner)).status).to.equal(204);
        }
        const metrics = await eventually('the churner counted', async () => {
          const text = await box.metrics();
          return /boxauth_notices_total\{[^}]*kind="ssf"[^}]*destination="rx-churn"[^}]*result="given_up"/.test(text) &&
            /boxauth_notices_total\{[^}]*kind="ssf"[^}]*destination="rx-churn"[^}]*result="sent"/.test(text)
            ? text
            : undefined;
        });
        for (const id of ids) expect(metrics, `stream ${id} in the metrics`).to.not.include(id);
      } finally {
        await churnReceiver.stop();
      }
    });
  });

  describe('events (Security Event Tokens, RFC 8417)', function () {
    let token: string;
    let streamId: string;
    before(async function () {
      token = await receiverToken('rx-events', { events: '#@allowed\\.example$' });
      const made = await stream(token, pushStream());
      expect(made.status, made.text).to.equal(201);
      streamId = made.body.stream_id;
    });

    it('answers a verification request 204, then pushes a verification event echoing state, with the stream’s Authorization exactly', async function () {
      const asked = await box.json('POST', '/ssf/verify', { stream_id: streamId, state: 'state-123' }, token);
      expect(asked.status, asked.text).to.equal(204);
      const { claims, push } = await pushed(VERIFICATION, 'rx-events', undefined, 'Bearer push-secret-1');
      expect(claims.sub_id).to.deep.equal({ format: 'opaque', id: streamId });
      expect((claims.events as Record<string, unknown>)[VERIFICATION]).to.deep.equal({ state: 'state-123' });
      expect(push.contentType).to.equal('application/secevent+jwt');
      expect(decodeProtectedHeader(push.token)).to.include({ alg: 'RS256', typ: 'secevent+jwt' });
      expect(claims).to.not.have.property('sub');
      expect(claims).to.not.have.property('exp');
      expect(Object.keys(claims.events as object)).to.have.length(1);
      const again = await box.json('POST', '/ssf/verify', { stream_id: streamId, state: 'too-soon' }, token);
      expect(again.status).to.equal(429);
    });

    it('sends no Authorization header to a stream that has none', async function () {
      const bare = await stream(token, { events_requested: ALL_EVENTS, delivery: { method: PUSH, endpoint_url: pushUrl } });
      await box.json('POST', '/ssf/verify', { stream_id: bare.body.stream_id, state: 'bare' }, token);
      const found = await eventually('the bare verification', async () =>
        receiver.pushes.find((p) => p.token && JSON.stringify(decodePayload(p.token)).includes('"bare"')),
      );
      expect(found.authorization).to.equal(undefined);
      await box.json('DELETE', `/ssf/streams?stream_id=${bare.body.stream_id}`, undefined, token);
    });

    it('pushes session-revoked when a person signs out, about their browser session', async function () {
      const id = await person('signs-out@allowed.example');
      const { accessToken } = await signedInAt(box, 'signs-out@allowed.example', 'a-good-password-1');
      expect((await box.json('DELETE', '/Session', undefined, accessToken)).status).to.equal(200);
      const { claims } = await pushed(SESSION_REVOKED, 'rx-events', id);
      const subject = claims.sub_id as { format: string; user: unknown; session: { format: string; id: string } };
      expect(subject.format).to.equal('complex');
      expect(subject.user).to.deep.equal({ format: 'iss_sub', iss: box.url, sub: String(id) });
      expect(subject.session.format).to.equal('opaque');
      const event = (claims.events as Record<string, Record<string, unknown>>)[SESSION_REVOKED]!;
      expect(event).to.include({ initiating_entity: 'user' });
      expect(event.event_timestamp).to.be.a('number');
    });

    it('pushes credential-change when a password changes', async function () {
      const id = await person('new-password@allowed.example');
      expect((await box.json('PUT', `/users/${id}`, { password: 'another-good-password-2' }, root)).status).to.equal(200);
      const { claims } = await pushed(CREDENTIAL_CHANGE, 'rx-events', id);
      expect(claims.sub_id).to.deep.equal({ format: 'iss_sub', iss: box.url, sub: String(id) });
      expect((claims.events as Record<string, unknown>)[CREDENTIAL_CHANGE]).to.include({
        credential_type: 'password',
        change_type: 'update',
        initiating_entity: 'admin',
      });
    });

    it('pushes account-disabled, account-enabled and account-purged as a person is turned off, on, and deleted', async function () {
      const id = await person('turned@allowed.example');
      expect((await box.json('PUT', `/users/${id}`, { active: false }, root)).status).to.be.oneOf([200]);
      await pushed(ACCOUNT_DISABLED, 'rx-events', id);
      expect((await box.json('PUT', `/users/${id}`, { active: true }, root)).status).to.be.oneOf([200]);
      await pushed(ACCOUNT_ENABLED, 'rx-events', id);
      expect((await box.json('DELETE', `/users/${id}`, undefined, root)).status).to.equal(200);
      await pushed(ACCOUNT_PURGED, 'rx-events', id);
    });

    it("sends nothing about a person the receiver's policies do not name (deny by default), nor to a removed subject", async function () {
      const hidden = await person('hidden@elsewhere.example');
      const removed = await person('removed@allowed.example');
      const dropped = await box.json(
        'POST',
        '/ssf/subjects/remove',
        { stream_id: streamId, subject: { format: 'email', email: 'removed@allowed.example' } },
        token,
      );
      expect(dropped.status).to.equal(204);
      const added = await box.json(
        'POST',
        '/ssf/subjects/add',
        { stream_id: streamId, subject: { format: 'email', email: 'hidden@elsewhere.example' } },
        token,
      );
      expect(added.status).to.equal(200); // silently ignored: the answer says nothing of who has an account
      await box.json('PUT', `/users/${hidden}`, { password: 'hidden-good-password-3' }, root);
      await box.json('PUT', `/users/${removed}`, { password: 'removed-good-password-3' }, root);
      // A later event about an allowed person arrives: the two before it were not sent.
      const marker = await person('marker@allowed.example');
      await box.json('PUT', `/users/${marker}`, { password: 'marker-good-password-3' }, root);
      await pushed(CREDENTIAL_CHANGE, 'rx-events', marker);
      const about = await Promise.all(receiver.pushes.map(async (p) => JSON.stringify((await jwtVerify(p.token, jwks)).payload.sub_id)));
      expect(about.some((s) => s.includes(`"sub":"${hidden}"`))).to.equal(false);
      expect(about.some((s) => s.includes(`"sub":"${removed}"`))).to.equal(false);
      const back = await box.json(
        'POST',
        '/ssf/subjects/add',
        { stream_id: streamId, subject: { format: 'iss_sub', iss: box.url, sub: String(removed) } },
        token,
      );
      expect(back.status).to.equal(200);
      await box.json('PUT', `/users/${removed}`, { password: 'removed-good-password-4' }, root);
      await pushed(CREDENTIAL_CHANGE, 'rx-events', removed);
    });

    it('keeps the SETs of a poll stream until the receiver acknowledges them (RFC 8936)', async function () {
      const polled = await stream(token, { events_requested: ALL_EVENTS, delivery: { method: POLL } });
      const id = polled.body.stream_id as string;
      await box.json('POST', '/ssf/verify', { stream_id: id, state: 'polled' }, token);
      const first = await eventually('a polled SET', async () => {
        const res = await box.json('POST', `/ssf/poll/${id}`, { maxEvents: 10 }, token);
        return Object.keys(res.body.sets).length ? res.body : undefined;
      });
      const [jti, set] = Object.entries(first.sets as Record<string, string>)[0]!;
      const { payload } = await jwtVerify(set, jwks, { issuer: box.url, audience: 'rx-events', typ: 'secevent+jwt' });
      expect(payload.jti).to.equal(jti);
      expect((payload.events as Record<string, unknown>)[VERIFICATION]).to.deep.equal({ state: 'polled' });
      const again = await box.json('POST', `/ssf/poll/${id}`, { ack: [jti], maxEvents: 10 }, token);
      expect(again.status).to.equal(200);
      expect(again.body).to.deep.equal({ sets: {}, moreAvailable: false });
      const other = await receiverToken('rx-poll-other');
      expect((await box.json('POST', `/ssf/poll/${id}`, {}, other)).status).to.equal(404);
    });
  });

  describe('assurance-level-change (CAEP 1.0 §3.4): a browser session steps up', function () {
    const MFA = 'urn:boxauth:acr:mfa';
    const PASSWORD_ONLY = 'urn:boxauth:acr:password';
    let asked: string; // a stream that asked for assurance-level-change
    let notAsked: string; // one of the same receiver that asked for credential-change only

    before(async function () {
      const token = await receiverToken('rx-acr', { events: '#@allowed\\.example$' });
      const delivery = (secret: string) => ({ method: PUSH, endpoint_url: pushUrl, authorization_header: `Bearer ${secret}` });
      const one = await stream(token, { events_requested: [ASSURANCE_LEVEL_CHANGE], delivery: delivery('acr-asked') });
      expect(one.status, one.text).to.equal(201);
      expect(one.body.events_delivered).to.deep.equal([ASSURANCE_LEVEL_CHANGE]);
      asked = `Bearer acr-asked`;
      const other = await stream(token, { events_requested: [CREDENTIAL_CHANGE], delivery: delivery('acr-not-asked') });
      expect(other.status, other.text).to.equal(201);
      notAsked = `Bearer acr-not-asked`;
    });

    /**
     * A person signed in with the password alone in one browser, who then sets up an authenticator
     * app on the account page in another (which strengthens that other browser's session): the first
     * browser, still password-only, its sid, and the app's key with the step its code was for.
     */
    async function passwordOnlyThenApp(email: string): Promise<{ id: number; weak: FormAgent; sid: string; secret: Buffer; step: number }> {
      const id = await person(email);
      const weak = new FormAgent(box);
      expect((await weak.signIn(email, 'a-good-password-1')).status).to.equal(303);
      const enrolling = new FormAgent(box);
      expect((await enrolling.signIn(email, 'a-good-password-1', '/auth/account')).status).to.equal(303);
      const { secret, step } = await appOnAccountPage(enrolling);
      const browsers = (await box.json('GET', `/users/${id}/sessions`, undefined, root)).body.browsers as { sid: string; amr: string[] }[];
      const passwordOnly = browsers.filter((b) => JSON.stringify(b.amr) === '["pwd"]');
      expect(passwordOnly, JSON.stringify(browsers)).to.have.length(1);
      return { id, weak, sid: passwordOnly[0]!.sid, secret, step };
    }

    /** An app asks the password-only browser for a second factor (acr_values); the person gives the app's next code; the app gets its code. */
    async function stepUp(weak: FormAgent, secret: Buffer, step: number): Promise<void> {
      const authorize = `/auth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'app', redirect_uri: REDIRECT, acr_values: MFA })}`;
      const sent = await weak.get(authorize);
      expect(sent.status, sent.text).to.be.oneOf([302, 303]);
      const stepPage = new URL(sent.headers.get('location')!, box.url);
      expect(stepPage.pathname).to.equal('/auth/sign-in/second-factor');
      const page = await weak.get(`${stepPage.pathname}${stepPage.search}`);
      const given = await weak.post('/auth/sign-in/second-factor', { ...hiddenFields(page.text), code: totpCode(secret, step + 1) });
      expect(given.status, given.text).to.equal(303);
      const back = new URL(given.headers.get('location')!, box.url);
      const authorized = await weak.get(`${back.pathname}${back.search}`);
      expect(authorized.status, authorized.text).to.equal(302);
      expect(new URL(authorized.headers.get('location')!).searchParams.get('code')).to.be.a('string');
    }

    /** The verified SETs pushed with `authorization` whose event is `type`, about person `user`. */
    async function setsOf(authorization: string, type: string, user: number): Promise<JWTPayload[]> {
      const found: JWTPayload[] = [];
      for (const push of receiver.pushes.filter((p) => p.authorization === authorization)) {
        const { payload } = await jwtVerify(push.token, jwks, { issuer: box.url, audience: 'rx-acr', typ: 'secevent+jwt' });
        if (type in (payload.events as object) && JSON.stringify(payload.sub_id).includes(`"sub":"${user}"`)) found.push(payload);
      }
      return found;
    }

    it('pushes one SET per session whose class rose, with the levels before and after; none to a stream that did not ask, none about a person the policy does not allow', async function () {
      // Someone the receiver's policies do not name steps up first: nothing about them is pushed.
      const hidden = await passwordOnlyThenApp('steps-up@elsewhere.example');
      await stepUp(hidden.weak, hidden.secret, hidden.step);

      const ada = await passwordOnlyThenApp('steps-up@allowed.example');
      await stepUp(ada.weak, ada.secret, ada.step);
      // Two sessions of Ada's rose from a password to several factors: the one that enrolled the app, and the one that stepped up.
      const sets = await eventually('two assurance-level-change SETs about Ada', async () => {
        const found = await setsOf(asked, ASSURANCE_LEVEL_CHANGE, ada.id);
        return found.length >= 2 ? found : undefined;
      });
      expect(sets).to.have.length(2);
      const stepped = sets.find((c) => (c.sub_id as { session?: { id: string } }).session?.id === ada.sid);
      expect(stepped, JSON.stringify(sets.map((c) => c.sub_id))).to.not.equal(undefined);
      expect(stepped!.sub_id).to.deep.equal({
        format: 'complex',
        user: { format: 'iss_sub', iss: box.url, sub: String(ada.id) },
        session: { format: 'opaque', id: ada.sid },
      });
      expect(Object.keys(stepped!.events as object)).to.deep.equal([ASSURANCE_LEVEL_CHANGE]);
      const event = (stepped!.events as Record<string, Record<string, unknown>>)[ASSURANCE_LEVEL_CHANGE]!;
      expect(event).to.include({
        namespace: 'urn:boxauth:acr',
        previous_level: PASSWORD_ONLY,
        current_level: MFA,
        change_direction: 'increase',
        initiating_entity: 'user',
      });
      expect(event.event_timestamp).to.be.a('number');
      const enrolled = sets.find((c) => c !== stepped)!;
      expect((enrolled.events as Record<string, Record<string, unknown>>)[ASSURANCE_LEVEL_CHANGE]).to.include({
        previous_level: PASSWORD_ONLY,
        current_level: MFA,
      });

      // The audit trail has both, as the person's events.
      const trail = await box.json('GET', `/AuditEvent?event=session_strengthened&user=${ada.id}`, undefined, root);
      expect(trail.status, trail.text).to.equal(200);
      const details = trail.body.entry.map((e: { resource: { action: string; detail: Record<string, unknown> } }) => e.resource);
      expect(details.map((d: { action: string }) => d.action).sort()).to.deep.equal(['factor-enrolled', 'factor-given']);
      expect(details.find((d: { action: string }) => d.action === 'factor-given').detail).to.deep.include({
        user: String(ada.id),
        sid: ada.sid,
        from: { acr: PASSWORD_ONLY, amr: ['pwd'] },
        to: { acr: MFA, amr: ['pwd', 'otp', 'mfa'] },
      });

      // A later event on the stream that asked for credential-change only arrives: no assurance-level-change went before it.
      expect((await box.json('PUT', `/users/${ada.id}`, { password: 'ada-new-password-2' }, root)).status).to.equal(200);
      await eventually('the credential-change after the step-up', async () => {
        const found = await setsOf(notAsked, CREDENTIAL_CHANGE, ada.id);
        return found.some((c) => JSON.stringify(c.events).includes('"credential_type":"password"')) || undefined;
      });
      expect(await setsOf(notAsked, ASSURANCE_LEVEL_CHANGE, ada.id)).to.deep.equal([]);
      for (const authorization of [asked, notAsked])
        expect(await setsOf(authorization, ASSURANCE_LEVEL_CHANGE, hidden.id), 'about the person the policy does not name').to.deep.equal(
          [],
        );
    });
  });
});

function decodePayload(token: string): unknown {
  return JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString());
}
