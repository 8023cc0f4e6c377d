// Subjects that say nothing (OpenID Connect Core §8, api/credentials/subjects.ts), as relying
// parties see them: a public client of a new box gets an opaque id, not the row id; two pairwise
// clients get different subs for one person, stable across sign-ins, the same in the ID token,
// UserInfo (Core §5.3.2), the JWT access token and introspection; a box that had people before
// keeps their row ids; and client A's pairwise sub presented by client B names nobody. Clients
// naming one sector_identifier_uri share subs only when the document there lists their redirect
// URIs (Registration §5): a client that names another party's sector is refused, not given its subs.
import { expect } from 'chai';
import { decodeJwt } from 'jose';
import pg from 'pg';
import { Box, basic } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';
import { EXCHANGE, introspect } from '../support/exchange-chain.js';
import { clientDocuments, type ClientDocuments } from '../support/client-documents.js';
import { testCa, type TestCa } from '../support/tls.js';

const CALLBACK = 'https://rp.example/cb';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';

const rp = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  grant_types: ['authorization_code', EXCHANGE, 'client_credentials'],
  first_party: true,
  auth: { authorization_code: { redirect_uri: CALLBACK, token_format: 'jwt' }, token_exchange: { token_format: 'jwt' } },
  ...extra,
});

interface Seen {
  idToken: string;
  accessToken: string;
  sub: string;
}

/** A person at a box, signed in once in one browser, and what each client sees of them. */
class Person {
  readonly browser: FormAgent;
  constructor(
    readonly box: Box,
    readonly secrets: Record<string, string>,
  ) {
    this.browser = new FormAgent(box);
  }

  async authorize(client: string, extra: Record<string, string> = {}): Promise<URL> {
    const params = { client_id: client, redirect_uri: CALLBACK, response_type: 'code', scope: 'openid', ...extra };
    const res = await this.browser.get(`/auth/authorize?${new URLSearchParams(params)}`);
    expect(res.status, res.text).to.equal(302);
    return new URL(res.headers.get('location')!);
  }

  /** The code flow for `client`: its ID token's sub, checked against its access token, UserInfo and introspection. */
  async seenBy(client: string): Promise<Seen> {
    const code = (await this.authorize(client)).searchParams.get('code');
    expect(code).to.be.a('string');
    const res = await this.box.form(
      '/auth/token',
      { grant_type: 'authorization_code', code: code!, redirect_uri: CALLBACK },
      { Authorization: basic(client, this.secrets[client]!) },
    );
    expect(res.status, res.text).to.equal(200);
    const idToken = res.body.id_token as string;
    const accessToken = res.body.access_token as string;
    const sub = decodeJwt(idToken).sub!;
    // Core §5.3.2: "The sub Claim in the UserInfo Response MUST be verified to exactly match the sub Claim in the ID Token".
    const info = await this.box.request('GET', '/auth/userinfo', { headers: { Authorization: `Bearer ${accessToken}` } });
    expect(info.status, info.text).to.equal(200);
    expect(info.body.sub).to.equal(sub);
    expect(decodeJwt(accessToken).sub).to.equal(sub);
    expect((await introspect(this.box, accessToken)).sub).to.equal(sub);
    return { idToken, accessToken, sub };
  }
}

/**
 * The AuthZEN decision of the wiki (which lets the group wiki-readers can_read) on the person
 * `id` names, asked by client `pep` (its secret in `secrets`), which may ask about the wiki and
 * read people on the box's API (what lets a PEP name them).
 */
async function wikiDecision(box: Box, secrets: Record<string, string>, pep: string, id: string): Promise<unknown> {
  const root = await box.rootToken();
  const put = async (path: string, body: Record<string, unknown>): Promise<void> => {
    expect((await box.json('PUT', path, body, root)).status).to.be.oneOf([200, 201]);
  };
  await put('/App/wiki', { urls: ['https://wiki.example'] });
  await put('/AccessPolicy/wiki-readers', {
    app: 'wiki',
    engine: 'matcho',
    link: [{ id: 'wiki-readers', resourceType: 'Group' }],
    matcho: { 'request-method': 'can_read' },
  });
  await put(`/AccessPolicy/${pep}-asks`, {
    engine: 'matcho',
    link: [{ id: pep, resourceType: 'Client' }],
    matcho: { 'request-method': '#^(post|get)$', uri: '#^/(apps/wiki/access/v1/evaluation|users/[0-9]+)$' },
  });
  const token = await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic(pep, secrets[pep]!) });
  expect(token.status, token.text).to.equal(200);
  const body = { subject: { type: 'user', id }, resource: { type: 'page', id: 'home' }, action: { name: 'can_read' } };
  return (await box.json('POST', '/apps/wiki/access/v1/evaluation', body, token.body.access_token as string)).body.decision;
}

describe('subject identifiers (OpenID Connect Core §8)', function () {
  describe('on a new box', function () {
    let box: Box;
    let ada: Person;
    let adaId: number;
    const secrets: Record<string, string> = {};

    before(async function () {
      box = await Box.start();
      const root = await box.rootToken();
      const readers = (await box.json('POST', '/groups', { name: 'wiki-readers' }, root)).body.id;
      const person = { email: 'ada@example.com', password: 'ada-password-1', 'group-ids': [readers] };
      const made = await box.json('POST', '/users', person, root);
      expect(made.status, made.text).to.equal(201);
      adaId = made.body.id as number;
      secrets.pub = (await box.addClient('pub', rp(), { policy: false })).secret;
      secrets.pa = (await box.addClient('pa', rp({ subject_type: 'pairwise' }), { policy: false })).secret;
      secrets.pb = (await box.addClient('pb', rp({ subject_type: 'pairwise' }), { policy: false })).secret;
      ada = new Person(box, secrets);
      expect((await ada.browser.signIn('ada@example.com', 'ada-password-1')).status).to.equal(303);
    });
    after(async function () {
      await box?.stop();
    });

    it('says both subject types in discovery', async function () {
      const metadata = await box.request('GET', '/.well-known/openid-configuration');
      expect(metadata.body.subject_types_supported).to.deep.equal(['public', 'pairwise']);
    });

    it('gives a public client an opaque id, not the row id', async function () {
      const { sub } = await ada.seenBy('pub');
      expect(sub).to.match(UUID).and.not.equal(String(adaId));
    });

    it('gives two pairwise clients different subs for one person, stable across sign-ins', async function () {
      const [a, b, pub] = [(await ada.seenBy('pa')).sub, (await ada.seenBy('pb')).sub, (await ada.seenBy('pub')).sub];
      expect(new Set([a, b, pub, String(adaId)]).size).to.equal(4);
      const again = new Person(box, secrets);
      expect((await again.browser.signIn('ada@example.com', 'ada-password-1')).status).to.equal(303);
      expect((await again.seenBy('pa')).sub).to.equal(a);
      expect((await again.seenBy('pb')).sub).to.equal(b);
    });

    it("takes client B's own id_token_hint for the person signed in, and client A's for nobody", async function () {
      const own = await ada.authorize('pb', { prompt: 'none', id_token_hint: (await ada.seenBy('pb')).idToken });
      expect(own.searchParams.get('code')).to.be.a('string');
      const other = await ada.authorize('pb', { prompt: 'none', id_token_hint: (await ada.seenBy('pa')).idToken });
      expect(other.searchParams.get('error')).to.equal('login_required');
    });

    it("names the person as client B sees them when B exchanges client A's token: A's pairwise sub never reaches B", async function () {
      const a = await ada.seenBy('pa');
      const b = await ada.seenBy('pb');
      // No AccessPolicy lets pb exchange: the refusal names the subject, as pb sees it.
      const refused = await box.form(
        '/auth/token',
        { grant_type: EXCHANGE, subject_token: a.accessToken, subject_token_type: ACCESS_TOKEN },
        { Authorization: basic('pb', secrets.pb!) },
      );
      expect(refused.status, refused.text).to.equal(400);
      expect(refused.body.error_description).to.include(b.sub).and.not.include(a.sub);
      const root = await box.rootToken();
      const allow = { engine: 'allow', link: [{ id: 'pb', resourceType: 'Client' }] };
      expect((await box.json('PUT', '/AccessPolicy/pb-allow', allow, root)).status).to.be.below(300);
      const exchanged = await box.form(
        '/auth/token',
        { grant_type: EXCHANGE, subject_token: a.accessToken, subject_token_type: ACCESS_TOKEN },
        { Authorization: basic('pb', secrets.pb!) },
      );
      expect(exchanged.status, exchanged.text).to.equal(200);
      expect(decodeJwt(exchanged.body.access_token as string).sub).to.equal(b.sub);
      expect((await introspect(box, exchanged.body.access_token as string)).sub).to.equal(b.sub);
    });

    it("lets client B name a person at AuthZEN by the sub B was given, and client A's sub for them names nobody", async function () {
      const asked = (id: string): Promise<unknown> => wikiDecision(box, secrets, 'pb', id);
      expect(await asked((await ada.seenBy('pb')).sub)).to.equal(true);
      expect(await asked((await ada.seenBy('pa')).sub)).to.not.equal(true);
      expect(await asked(String(adaId))).to.equal(true); // the box id, as before
    });
    it('tells an app behind the gate who calls by the sub their token carries: never the row id', async function () {
      const root = await box.rootToken();
      const notes = 'https://notes.example';
      expect((await box.json('PUT', '/App/notes', { urls: [notes] }, root)).status).to.be.oneOf([200, 201]);
      const readers = { app: 'notes', engine: 'allow', link: [{ id: 'wiki-readers', resourceType: 'Group' }] };
      expect((await box.json('PUT', '/AccessPolicy/notes-readers', readers, root)).status).to.be.below(300);
      const forNotes = { auth: { authorization_code: { redirect_uri: CALLBACK, token_format: 'jwt' } }, audience: [notes] };
      secrets.npub = (await box.addClient('npub', rp(forNotes), { policy: false })).secret;
      secrets.npair = (await box.addClient('npair', rp({ ...forNotes, subject_type: 'pairwise' }), { policy: false })).secret;
      const seen = new Map<string, string>();
      for (const client of ['npub', 'npair']) {
        const code = (await ada.authorize(client, { resource: notes })).searchParams.get('code')!;
        const res = await box.form(
          '/auth/token',
          { grant_type: 'authorization_code', code, redirect_uri: CALLBACK, resource: notes },
          { Authorization: basic(client, secrets[client]!) },
        );
        expect(res.status, res.text).to.equal(200);
        const token = res.body.access_token as string;
        expect(decodeJwt(token).aud).to.equal(notes);
        const gate = await box.request('GET', '/authz/forward-auth', {
          headers: {
            'X-Forwarded-Method': 'GET',
            'X-Forwarded-Proto': 'https',
            'X-Forwarded-Host': 'notes.example',
            'X-Forwarded-Uri': '/',
            Authorization: `Bearer ${token}`,
          },
        });
        expect(gate.status, gate.text).to.equal(200);
        // The app reads one person in the header and in the token it was shown (Core §8: the client's sub).
        expect(gate.headers.get('x-auth-request-user')).to.equal(decodeJwt(token).sub);
        seen.set(client, gate.headers.get('x-auth-request-user')!);
      }
      expect(seen.get('npub')).to.equal((await ada.seenBy('pub')).sub);
      expect(new Set([seen.get('npub'), seen.get('npair'), String(adaId)]).size).to.equal(3);
    });
  });

  describe('with a sector_identifier_uri (OpenID Connect Registration §5)', function () {
    const EVIL_CALLBACK = 'https://evil.example/cb';
    let ca: TestCa;
    let docs: ClientDocuments;
    let box: Box;
    let ada: Person;
    let sector: string;
    const secrets: Record<string, string> = {};

    before(async function () {
      ca = testCa();
      docs = await clientDocuments(ca);
      box = await Box.start({
        env: { NODE_EXTRA_CA_CERTS: ca.caFile, BOXAUTH_CLIENT_METADATA_ALLOWED_ADDRESSES: '127.0.0.1/32, ::1/128' },
      });
      const root = await box.rootToken();
      const readers = (await box.json('POST', '/groups', { name: 'wiki-readers' }, root)).body.id;
      const made = await box.json('POST', '/users', { email: 'ada@example.com', password: 'ada-password-1', 'group-ids': [readers] }, root);
      expect(made.status, made.text).to.equal(201);
      // The relying party's sector document lists its clients' redirect URIs, and nobody else's.
      sector = `${docs.origin.replace('127.0.0.1', 'localhost')}/sector.json`;
      docs.serve('/sector.json', { body: [CALLBACK] });
      docs.serve('/broken.json', { status: 500 });
      const pairwise = (uri: string, callback = CALLBACK): Record<string, unknown> =>
        rp({
          subject_type: 'pairwise',
          sector_identifier_uri: uri,
          auth: { authorization_code: { redirect_uri: callback, token_format: 'jwt' }, token_exchange: { token_format: 'jwt' } },
        });
      secrets.rp1 = (await box.addClient('rp1', pairwise(sector), { policy: false })).secret;
      secrets.rp2 = (await box.addClient('rp2', pairwise(sector), { policy: false })).secret;
      secrets.own = (await box.addClient('own', rp({ subject_type: 'pairwise' }), { policy: false })).secret;
      // Another team's client, naming the relying party's sector from its own redirect URI.
      secrets.evil = (await box.addClient('evil', pairwise(sector, EVIL_CALLBACK), { policy: false })).secret;
      // A client of token exchange alone: no redirect URI its document could list, so nothing vouches for it.
      secrets.bare = (
        await box.addClient('bare', { grant_types: [EXCHANGE], subject_type: 'pairwise', sector_identifier_uri: sector }, { policy: true })
      ).secret;
      secrets.broken = (
        await box.addClient('broken', pairwise(`${docs.origin.replace('127.0.0.1', 'localhost')}/broken.json`), { policy: false })
      ).secret;
      ada = new Person(box, secrets);
      expect((await ada.browser.signIn('ada@example.com', 'ada-password-1')).status).to.equal(303);
    });
    after(async function () {
      await box?.stop();
      await docs?.close();
    });

    it("gives the clients its document lists the sector's one sub, and another client its own", async function () {
      const [one, two, own] = [(await ada.seenBy('rp1')).sub, (await ada.seenBy('rp2')).sub, (await ada.seenBy('own')).sub];
      expect(one).to.equal(two).and.not.equal(own);
      expect(docs.hits('/sector.json')).to.be.greaterThan(0);
    });

    it("refuses a client naming another party's sector whose document does not list its redirect URI", async function () {
      const back = await ada.authorize('evil', { redirect_uri: EVIL_CALLBACK });
      expect(back.searchParams.get('code')).to.equal(null);
      expect(back.searchParams.get('error')).to.equal('invalid_request');
      expect(back.searchParams.get('error_description')).to.match(/sector_identifier_uri does not list its redirect URIs/);
    });

    it("refuses it at the token endpoint too: exchanging rp1's token gives it no sub of the sector", async function () {
      const { accessToken } = await ada.seenBy('rp1');
      const root = await box.rootToken();
      const allow = { engine: 'allow', link: [{ id: 'evil', resourceType: 'Client' }] };
      expect((await box.json('PUT', '/AccessPolicy/evil-allow', allow, root)).status).to.be.below(300);
      const res = await box.form(
        '/auth/token',
        { grant_type: EXCHANGE, subject_token: accessToken, subject_token_type: ACCESS_TOKEN },
        { Authorization: basic('evil', secrets.evil!) },
      );
      expect(res.status, res.text).to.equal(400);
      expect(res.body.error).to.equal('invalid_request');
      expect(res.body.access_token).to.equal(undefined);
    });

    it("refuses a client without a redirect URI naming that sector: exchanging rp1's token gives it no sub of the sector", async function () {
      const { accessToken } = await ada.seenBy('rp1');
      const res = await box.form(
        '/auth/token',
        { grant_type: EXCHANGE, subject_token: accessToken, subject_token_type: ACCESS_TOKEN },
        { Authorization: basic('bare', secrets.bare!) },
      );
      expect(res.status, res.text).to.equal(400);
      expect(res.body.error_description).to.match(/sector_identifier_uri cannot vouch for a client that registered no redirect URI/);
      expect(res.body.access_token).to.equal(undefined);
    });

    it("lets no PEP name a person at AuthZEN by the sector's sub unless the sector's document lists it", async function () {
      const asked = (pep: string, id: string): Promise<unknown> => wikiDecision(box, secrets, pep, id);
      const sectorSub = (await ada.seenBy('rp1')).sub;
      expect(await asked('rp2', sectorSub)).to.equal(true);
      // evil names the sector without being listed: the sector's sub is nobody to it.
      expect(await asked('evil', sectorSub)).to.not.equal(true);
    });

    it("answers UserInfo with the token's own sub: a client that names the sector later is given none of its subs", async function () {
      // A client of its own sector is given a token; then its writer names the relying party's sector,
      // whose document does not list it. UserInfo must not make the sub anew under that sector.
      const own = { authorization_code: { redirect_uri: EVIL_CALLBACK, token_format: 'jwt' } };
      const client = rp({ grant_types: ['authorization_code'], subject_type: 'pairwise', auth: own });
      const { secret } = await box.addClient('turncoat', client, { policy: false });
      const back = await ada.authorize('turncoat', { redirect_uri: EVIL_CALLBACK });
      const res = await box.form(
        '/auth/token',
        { grant_type: 'authorization_code', code: back.searchParams.get('code')!, redirect_uri: EVIL_CALLBACK },
        { Authorization: basic('turncoat', secret) },
      );
      expect(res.status, res.text).to.equal(200);
      const sub = decodeJwt(res.body.id_token as string).sub;
      await box.addClient('turncoat', { ...client, sector_identifier_uri: sector }, { policy: false, secret });
      expect(await ada.authorize('turncoat', { redirect_uri: EVIL_CALLBACK }).then((u) => u.searchParams.get('error'))).to.equal(
        'invalid_request',
      );
      const info = await box.request('GET', '/auth/userinfo', { headers: { Authorization: `Bearer ${res.body.access_token as string}` } });
      expect(info.status, info.text).to.equal(200);
      // Core §5.3.2: UserInfo's sub is the ID token's, and never the sector's.
      expect(info.body.sub)
        .to.equal(sub)
        .and.not.equal((await ada.seenBy('rp1')).sub);
    });

    it('refuses a client whose sector document cannot be fetched, rather than give it other subs', async function () {
      const back = await ada.authorize('broken');
      expect(back.searchParams.get('code')).to.equal(null);
      expect(back.searchParams.get('error')).to.equal('invalid_request');
      expect(back.searchParams.get('error_description')).to.match(/could not be fetched/);
    });
  });

  describe('on a box that had people before release 036', function () {
    let box: Box;

    after(async function () {
      await box?.stop();
    });

    it('keeps handing out their row ids to public clients, and pairwise subs to pairwise ones', async function () {
      box = await Box.start();
      const root = await box.rootToken();
      const made = await box.json('POST', '/users', { email: 'bob@example.com', password: 'bob-password-1' }, root);
      const secrets = {
        pub: (await box.addClient('pub', rp(), { policy: false })).secret,
        pa: (await box.addClient('pa', rp({ subject_type: 'pairwise' }), { policy: false })).secret,
      };
      // The database as the release before left it, with bob in it; the box starts again and migrates.
      await box.stop();
      const db = new pg.Client({ connectionString: box.databaseUrl });
      await db.connect();
      try {
        await db.query("DELETE FROM box_settings WHERE name = 'public_subjects'");
        await db.query("DELETE FROM schema_migrations WHERE name LIKE '036%'");
        await db.query('ALTER TABLE users DROP COLUMN subject');
      } finally {
        await db.end();
      }
      await box.launch();
      const bob = new Person(box, secrets);
      expect((await bob.browser.signIn('bob@example.com', 'bob-password-1')).status).to.equal(303);
      expect((await bob.seenBy('pub')).sub).to.equal(String(made.body.id));
      expect((await bob.seenBy('pa')).sub).to.match(/^[A-Za-z0-9_-]{22}$/);
    });
  });
});
