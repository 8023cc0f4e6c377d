// The Shared Signals transmitter and pairwise receivers (OpenID Connect Core §8.1;
// docs/guides/openid-connect.md): a receiver whose Client is pairwise is told of a person by the
// `sub` its ID tokens give them, never their public sub or row id; it adds and removes a person by
// that sub, and by no other client's, nor the public sub, nor the row id; two receivers of two
// sectors name one person differently in one kind of event; and a receiver naming another party's
// sector_identifier_uri, whose document does not list it (or that has no redirect URI the document
// could list), is given none of that sector's subs and reads none: its token, of client
// credentials, never met the check the authorization and token endpoints make. Its events wait,
// and reach it once the sector's document lists it.
// Each receiver polls its stream (RFC 8936): what it reads there is what it was sent.
import { expect } from 'chai';
import { createRemoteJWKSet, decodeJwt, jwtVerify, type JWTPayload } from 'jose';
import { Box, basic, eventually } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';
import { clientDocuments, type ClientDocuments } from '../support/client-documents.js';
import { testCa, type TestCa } from '../support/tls.js';

const SESSION_REVOKED = 'https://schemas.openid.net/secevent/caep/event-type/session-revoked';
const CREDENTIAL_CHANGE = 'https://schemas.openid.net/secevent/caep/event-type/credential-change';
const POLL = 'urn:ietf:rfc:8936';
const CALLBACK = 'https://rp.example/cb';
const EVIL_CALLBACK = 'https://evil.example/cb';
const LATER_CALLBACK = 'https://later.example/cb';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** A receiver: its client, its token for the stream API, its poll stream, and every SET it read there. */
interface Receiver {
  id: string;
  secret: string;
  token: string;
  stream: string;
  read: JWTPayload[];
}

describe('Shared Signals transmitter: pairwise receivers', function () {
  this.timeout(120_000);
  let ca: TestCa;
  let docs: ClientDocuments;
  let box: Box;
  let root: string;
  let jwks: ReturnType<typeof createRemoteJWKSet>;
  let sector: string;
  const receivers: Record<string, Receiver> = {};

  /**
   * A Client that is both a relying party (the code flow, for its ID tokens) and a receiver (its own
   * token with SSF's scopes), its policies letting it use the stream API and have the events of
   * people at allowed.example, with a poll stream asking for session-revoked and credential-change.
   */
  async function receiver(id: string, client: Record<string, unknown>): Promise<Receiver> {
    const secret = `${id}-secret-123`;
    await box.addClient(
      id,
      {
        grant_types: ['authorization_code', 'client_credentials'],
        first_party: true,
        scope: ['openid', 'ssf.read', 'ssf.manage'],
        auth: { authorization_code: { redirect_uri: CALLBACK } },
        ...client,
      },
      { secret, policy: false },
    );
    const link = [{ id, resourceType: 'Client' }];
    for (const [name, matcho] of Object.entries({
      streams: { uri: '#^/ssf/' },
      events: { ssf: { subject: { email: '#@allowed\\.example$' } } },
    }))
      expect((await box.json('PUT', `/AccessPolicy/${id}-${name}`, { engine: 'matcho', link, matcho }, root)).status).to.be.below(300);
    const token = await box.form(
      '/auth/token',
      { grant_type: 'client_credentials', scope: 'ssf.read ssf.manage' },
      { Authorization: basic(id, secret) },
    );
    expect(token.status, token.text).to.equal(200);
    const made = await box.json(
      'POST',
      '/ssf/streams',
      { events_requested: [SESSION_REVOKED, CREDENTIAL_CHANGE], delivery: { method: POLL } },
      token.body.access_token as string,
    );
    expect(made.status, made.text).to.equal(201);
    return { id, secret, token: token.body.access_token as string, stream: made.body.stream_id as string, read: [] };
  }

  /** Polls `rx`'s stream, verifying and acknowledging every SET waiting there; all it has read so far. */
  async function poll(rx: Receiver): Promise<JWTPayload[]> {
    const res = await box.json('POST', `/ssf/poll/${rx.stream}`, { maxEvents: 100 }, rx.token);
    expect(res.status, res.text).to.equal(200);
    const sets = res.body.sets as Record<string, string>;
    for (const set of Object.values(sets))
      rx.read.push((await jwtVerify(set, jwks, { issuer: box.url, audience: rx.id, typ: 'secevent+jwt' })).payload);
    if (Object.keys(sets).length) await box.json('POST', `/ssf/poll/${rx.stream}`, { ack: Object.keys(sets), maxEvents: 0 }, rx.token);
    return rx.read;
  }

  /** The person a SET names (RFC 9493 iss_sub, alone or as a complex subject's user). */
  const named = (set: JWTPayload): unknown => {
    const subject = set.sub_id as { format: string; user?: unknown };
    return subject.format === 'complex' ? subject.user : subject;
  };
  const about = (type: string, sub: string) => (set: JWTPayload) =>
    type in (set.events as object) && JSON.stringify(named(set)) === JSON.stringify({ format: 'iss_sub', iss: box.url, sub });

  /** The SET of `type` about `sub` that `rx` reads, once it arrives. */
  const arrives = (rx: Receiver, type: string, sub: string): Promise<JWTPayload> =>
    eventually(`a ${type} SET about ${sub} at ${rx.id}`, async () => (await poll(rx)).find(about(type, sub)));

  /** A person at allowed.example: their row id, and their browser signed in. */
  async function person(email: string): Promise<{ id: number; email: string; browser: FormAgent }> {
    const made = await box.json('POST', '/users', { email, password: 'a-good-password-1' }, root);
    expect(made.status, made.text).to.equal(201);
    const browser = new FormAgent(box);
    expect((await browser.signIn(email, 'a-good-password-1')).status).to.equal(303);
    return { id: made.body.id as number, email, browser };
  }

  /** The `sub` of the ID token `client` gets through `browser` (the code flow), and its access token. */
  async function idTokenOf(browser: FormAgent, client: string, redirect = CALLBACK): Promise<{ sub: string; accessToken: string }> {
    const params = { client_id: client, redirect_uri: redirect, response_type: 'code', scope: 'openid' };
    const authorized = await browser.get(`/auth/authorize?${new URLSearchParams(params)}`);
    expect(authorized.status, authorized.text).to.equal(302);
    const code = new URL(authorized.headers.get('location')!).searchParams.get('code');
    expect(code, authorized.headers.get('location')!).to.be.a('string');
    const granted = await box.form(
      '/auth/token',
      { grant_type: 'authorization_code', code: code!, redirect_uri: redirect },
      { Authorization: basic(client, `${client}-secret-123`) },
    );
    expect(granted.status, granted.text).to.equal(200);
    return { sub: decodeJwt(granted.body.id_token as string).sub!, accessToken: granted.body.access_token as string };
  }

  /** A new password for person `id`, written by an administrator: one credential-change about them. */
  async function newPassword(id: number): Promise<void> {
    const res = await box.json('PUT', `/users/${id}`, { password: `new-password-${Math.random().toString(36).slice(2)}` }, root);
    expect(res.status, res.text).to.equal(200);
  }

  const subject = (rx: Receiver, path: 'add' | 'remove', sub: unknown) =>
    box.json('POST', `/ssf/subjects/${path}`, { stream_id: rx.stream, subject: sub }, rx.token);
  const issSub = (sub: string) => ({ format: 'iss_sub', iss: box.url, sub });

  /**
   * A marker: a credential-change about a person nobody removed, once `rx` reads it, every event
   * made before it has been fanned out to `rx`'s stream or not at all (api/ssf/kind.ts).
   */
  async function markerRead(rx: Receiver, marker: { id: number; browser: FormAgent }): Promise<void> {
    const sub = (await idTokenOf(marker.browser, rx.id)).sub;
    await newPassword(marker.id);
    const before = (await poll(rx)).filter(about(CREDENTIAL_CHANGE, sub)).length;
    await eventually(`the marker at ${rx.id}`, async () => (await poll(rx)).filter(about(CREDENTIAL_CHANGE, sub)).length > before);
  }

  before(async function () {
    ca = testCa();
    docs = await clientDocuments(ca);
    // A new box: public subs are opaque ids, so the public sub, the row id and each pairwise sub all differ.
    box = await Box.start({
      env: {
        NODE_EXTRA_CA_CERTS: ca.caFile,
        BOXAUTH_CLIENT_METADATA_ALLOWED_ADDRESSES: '127.0.0.1/32, ::1/128',
        // A notice held is tried again within seconds, not minutes.
        BOXAUTH_NOTICE_FIRST_RETRY_SECONDS: '1',
        BOXAUTH_NOTICE_LONGEST_RETRY_SECONDS: '2',
      },
    });
    root = await box.rootToken();
    jwks = createRemoteJWKSet(new URL(`${box.url}/.well-known/jwks.json`));
    // A relying party's sector: its document lists its clients' redirect URI, and nobody else's.
    sector = `${docs.origin.replace('127.0.0.1', 'localhost')}/sector.json`;
    docs.serve('/sector.json', { body: [CALLBACK] });
    await box.addClient(
      'pub',
      { grant_types: ['authorization_code'], first_party: true, auth: { authorization_code: { redirect_uri: CALLBACK } } },
      { secret: 'pub-secret-123', policy: false },
    );
    receivers.a = await receiver('rx-a', { subject_type: 'pairwise' });
    receivers.b = await receiver('rx-b', { subject_type: 'pairwise' });
    receivers.sector = await receiver('rx-sector', { subject_type: 'pairwise', sector_identifier_uri: sector });
  });
  after(async function () {
    await box?.stop();
    await docs?.close();
  });

  it("names a person in its events by the receiver's pairwise sub, the one its ID tokens carry: not the public sub, not the row id", async function () {
    const ada = await person('ada@allowed.example');
    const pairwise = (await idTokenOf(ada.browser, 'rx-a')).sub;
    const publicSub = (await idTokenOf(ada.browser, 'pub')).sub;
    expect(publicSub).to.match(UUID);
    expect(new Set([pairwise, publicSub, String(ada.id)]).size).to.equal(3);

    // A new password: a credential-change about her, and her browser session ends (session-revoked, a complex subject).
    await newPassword(ada.id);
    const changed = await arrives(receivers.a!, CREDENTIAL_CHANGE, pairwise);
    expect(changed.sub_id).to.deep.equal({ format: 'iss_sub', iss: box.url, sub: pairwise });
    const revoked = await arrives(receivers.a!, SESSION_REVOKED, pairwise);
    expect(revoked.sub_id).to.deep.include({ format: 'complex', user: { format: 'iss_sub', iss: box.url, sub: pairwise } });

    const everything = JSON.stringify((await poll(receivers.a!)).map((s) => s.sub_id));
    expect(everything).to.not.include(publicSub);
    expect(everything).to.not.match(new RegExp(`"sub":"${ada.id}"`));
  });

  it("removes and adds a person by the receiver's pairwise sub: their events stop, then flow again", async function () {
    const rx = receivers.a!;
    const bea = await person('bea@allowed.example');
    const marker = await person('marker-1@allowed.example');
    const sub = (await idTokenOf(bea.browser, rx.id)).sub;

    expect((await subject(rx, 'remove', issSub(sub))).status).to.equal(204);
    await newPassword(bea.id);
    await markerRead(rx, marker);
    expect((await poll(rx)).filter(about(CREDENTIAL_CHANGE, sub))).to.deep.equal([]);

    expect((await subject(rx, 'add', issSub(sub))).status).to.equal(200);
    await newPassword(bea.id);
    await arrives(rx, CREDENTIAL_CHANGE, sub);
  });

  it("takes no other name for a removed person: another receiver's pairwise sub, the public sub and the row id add nobody", async function () {
    const rx = receivers.a!;
    const cy = await person('cy@allowed.example');
    const marker = await person('marker-2@allowed.example');
    const own = (await idTokenOf(cy.browser, rx.id)).sub;
    const others = {
      "rx-b's pairwise sub": (await idTokenOf(cy.browser, 'rx-b')).sub,
      "rx-sector's pairwise sub": (await idTokenOf(cy.browser, 'rx-sector')).sub,
      'the public sub': (await idTokenOf(cy.browser, 'pub')).sub,
      'the row id': String(cy.id),
    };
    expect((await subject(rx, 'remove', issSub(own))).status).to.equal(204);
    for (const [what, sub] of Object.entries(others))
      for (const named of [issSub(sub), { format: 'opaque', id: sub }]) {
        // SSF 1.0 §8.1.3.1: a subject the transmitter does not act on may be silently ignored (200), saying nothing of who has an account.
        const added = await subject(rx, 'add', named);
        expect(added.status, `${what} as ${named.format}: ${added.text}`).to.equal(200);
      }
    await newPassword(cy.id);
    await markerRead(rx, marker);
    const aboutCy = (await poll(rx)).filter((s) =>
      Object.values(others)
        .concat(own)
        .some((sub) => about(CREDENTIAL_CHANGE, sub)(s)),
    );
    expect(aboutCy, 'a credential-change about the removed person').to.deep.equal([]);
  });

  it('names one person differently to two receivers of two sectors, in the same kind of event', async function () {
    const dee = await person('dee@allowed.example');
    const rxs = [receivers.a!, receivers.b!, receivers.sector!];
    const subs: string[] = [];
    for (const rx of rxs) subs.push((await idTokenOf(dee.browser, rx.id)).sub);
    const publicSub = (await idTokenOf(dee.browser, 'pub')).sub;
    expect(new Set([...subs, String(dee.id), publicSub]).size).to.equal(5);
    await newPassword(dee.id);
    for (const [i, rx] of rxs.entries()) {
      const set = await arrives(rx, CREDENTIAL_CHANGE, subs[i]!);
      expect(set.sub_id).to.deep.equal({ format: 'iss_sub', iss: box.url, sub: subs[i] });
    }
  });

  it("holds a receiver's events while its sector's document does not list it, and sends them once it does", async function () {
    const later = await receiver('rx-later', {
      subject_type: 'pairwise',
      sector_identifier_uri: sector,
      auth: { authorization_code: { redirect_uri: LATER_CALLBACK } },
    });
    const gil = await person('gil@allowed.example');
    const sectorSub = (await idTokenOf(gil.browser, 'rx-sector')).sub;
    await newPassword(gil.id);
    await eventually('a held try at rx-later', async () =>
      /boxauth_notices_total\{[^}]*kind="ssf"[^}]*destination="rx-later"[^}]*result="retrying"/.test(await box.metrics()),
    );
    expect(await poll(later)).to.deep.equal([]);
    // The relying party takes the receiver into its sector: its document lists the receiver's redirect URI.
    docs.serve('/sector.json', { body: [CALLBACK, LATER_CALLBACK] });
    try {
      const set = await arrives(later, CREDENTIAL_CHANGE, sectorSub);
      expect(set.sub_id).to.deep.equal({ format: 'iss_sub', iss: box.url, sub: sectorSub });
    } finally {
      docs.serve('/sector.json', { body: [CALLBACK] });
    }
  });

  it("sends no event whose sub was made for another party's sector once the receiver names a sector of its own", async function () {
    // Its events wait while the sector's document does not list it; its writer then drops the sector.
    const client = {
      grant_types: ['authorization_code', 'client_credentials'],
      first_party: true,
      scope: ['openid', 'ssf.read', 'ssf.manage'],
      auth: { authorization_code: { redirect_uri: EVIL_CALLBACK } },
      subject_type: 'pairwise',
    };
    const turned = await receiver('rx-turned', { ...client, sector_identifier_uri: sector });
    const hal = await person('hal@allowed.example');
    const sectorSub = (await idTokenOf(hal.browser, 'rx-sector')).sub;
    await newPassword(hal.id);
    await eventually('a held try at rx-turned', async () =>
      /boxauth_notices_total\{[^}]*kind="ssf"[^}]*destination="rx-turned"[^}]*result="retrying"/.test(await box.metrics()),
    );
    await box.addClient('rx-turned', client, { secret: turned.secret, policy: false });
    // The held notice is tried again under the receiver as it is now: sent, or given up.
    await eventually('the held notice at rx-turned settled', async () =>
      /boxauth_notices_total\{[^}]*kind="ssf"[^}]*destination="rx-turned"[^}]*result="(sent|given_up)"/.test(await box.metrics()),
    );
    expect((await poll(turned)).filter(about(CREDENTIAL_CHANGE, sectorSub))).to.deep.equal([]);
    // What it is sent now names people by its own sector's subs.
    const ivy = await person('ivy@allowed.example');
    const ownSub = (await idTokenOf(ivy.browser, 'rx-turned', EVIL_CALLBACK)).sub;
    await newPassword(ivy.id);
    await arrives(turned, CREDENTIAL_CHANGE, ownSub);
  });

  for (const [what, id, client] of [
    ['with a redirect URI of its own', 'rx-evil', { auth: { authorization_code: { redirect_uri: EVIL_CALLBACK } } }],
    ['with no redirect URI (client credentials alone)', 'rx-evil-bare', { grant_types: ['client_credentials'], auth: undefined }],
  ] as const)
    describe(`a receiver naming another party's sector_identifier_uri, ${what}`, function () {
      let evil: Receiver;
      before(async function () {
        evil = await receiver(id, { subject_type: 'pairwise', sector_identifier_uri: sector, ...client });
      });

      it("is sent no event naming a person by that sector's sub", async function () {
        const eve = await person(`eve-${id}@allowed.example`);
        const sectorSub = (await idTokenOf(eve.browser, 'rx-sector')).sub;
        await newPassword(eve.id);
        await arrives(receivers.sector!, CREDENTIAL_CHANGE, sectorSub);
        // Its notice was tried (held for later, or sent): whatever it put in the stream is there now.
        await eventually(`a try at ${id}`, async () =>
          new RegExp(`boxauth_notices_total\\{[^}]*kind="ssf"[^}]*destination="${id}"`).test(await box.metrics()),
        );
        expect((await poll(evil)).filter(about(CREDENTIAL_CHANGE, sectorSub))).to.deep.equal([]);
      });

      it("cannot add or remove a person by that sector's sub: its sector is refused, as at the authorization endpoint", async function () {
        const fay = await person(`fay-${id}@allowed.example`);
        const sectorSub = (await idTokenOf(fay.browser, 'rx-sector')).sub;
        for (const path of ['remove', 'add'] as const) {
          const res = await subject(evil, path, issSub(sectorSub));
          expect(res.status, `${path}: ${res.text}`).to.equal(400);
          expect(res.body.error_description).to.match(/sector_identifier_uri/);
        }
      });
    });
});
