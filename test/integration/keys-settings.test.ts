// The box's signing keys and settings on its own API: GET /keys and POST /keys/rotate (a new key
// signs, the old one stays published so what it signed still verifies), GET /settings (an
// allow-list: no secret the box was started with is in it), each behind the policies.
import { expect } from 'chai';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import pg from 'pg';
import type { KeyJson } from '../../api/http/routes/keys.js';
import { Box, basic, boxForSuite, eventually } from '../support/box.js';
import { userToken } from '../support/user-token.js';

/** A key as GET /keys answers it. */
type Key = KeyJson;

/** Every member a JWK's private half has (RFC 7518 §6.2.2, §6.3.2, RFC 8037 §2). */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k', 'private_jwk', 'privateJwk'];

function actives(keys: Key[]): Record<string, string[]> {
  const byAlg: Record<string, string[]> = {};
  for (const k of keys.filter((k) => k.state === 'active')) (byAlg[k.alg] ??= []).push(k.kid);
  return byAlg;
}

describe('signing keys and settings on the API', function () {
  this.timeout(60_000);
  let box: Box;
  let root: string;
  boxForSuite((b, r) => {
    [box, root] = [b, r];
  });

  const keys = async (token = root): Promise<Key[]> => {
    const res = await box.json('GET', '/keys', undefined, token);
    expect(res.status, res.text).to.equal(200);
    return res.body.keys as Key[];
  };
  const jwks = async () => createLocalJWKSet((await box.json('GET', '/.well-known/jwks.json')).body);

  it('GET /keys: one active key per algorithm, each published, what it signs, and no private half', async function () {
    const res = await box.json('GET', '/keys', undefined, root);
    expect(res.status).to.equal(200);
    const listed = res.body.keys as Key[];
    expect(actives(listed)).to.have.all.keys('ES256', 'RS256', 'EdDSA');
    for (const kids of Object.values(actives(listed))) expect(kids).to.have.length(1);
    const es = listed.find((k) => k.alg === 'ES256' && k.state === 'active')!;
    expect(es).to.include({ use: 'sig', external: false, retired_at: null, published_until: null });
    expect(es.signs).to.deep.equal(['access_token', 'id_token']); // BOXAUTH_JWT_ALG's key
    expect(listed.find((k) => k.alg === 'RS256')!.signs).to.deep.equal(['id_token']);
    expect(Date.parse(es.rotates_at!) - Date.parse(es.created_at)).to.equal(30 * 86_400_000); // BOXAUTH_KEY_ROTATION_DAYS
    const published = (await box.json('GET', '/.well-known/jwks.json')).body.keys.map((k: { kid: string }) => k.kid);
    expect(listed.map((k) => k.kid).sort()).to.deep.equal([...published].sort());
    for (const member of PRIVATE_MEMBERS) expect(res.text).not.to.include(`"${member}"`);
  });

  it('needs a token, and a policy: 401 without one, 403 for a client or a person no policy allows', async function () {
    expect((await box.json('GET', '/keys')).status).to.equal(401);
    expect((await box.json('POST', '/keys/rotate')).status).to.equal(401);
    expect((await box.json('GET', '/settings')).status).to.equal(401);
    const { secret } = await box.addClient('keyless', {}, { policy: false });
    const client = (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('keyless', secret) })).body
      .access_token as string;
    const person = await box.json('POST', '/users', { email: 'nobody@example.com', password: 'nobody-password' }, root);
    const personal = await userToken(box, person.body.id as number);
    const before = await keys();
    for (const token of [client, personal]) {
      expect((await box.json('GET', '/keys', undefined, token)).status).to.equal(403);
      expect((await box.json('GET', '/settings', undefined, token)).status).to.equal(403);
      const rotate = await box.json('POST', '/keys/rotate', {}, token);
      expect(rotate.status).to.equal(403);
      expect(rotate.body.error).to.equal('access_denied');
    }
    expect(await keys()).to.deep.equal(before); // nothing rotated
  });

  it('POST /keys/rotate: new tokens are signed by the new key, tokens signed before still work and verify at the JWKS', async function () {
    const { secret } = await box.addClient('signed', {
      auth: { client_credentials: { token_format: 'jwt', access_token_expiration: 600 } },
    });
    const token = async (): Promise<string> =>
      (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('signed', secret) })).body
        .access_token as string;
    const before = await token();
    const oldKid = decodeProtectedHeader(before).kid!;
    expect(actives(await keys()).ES256).to.deep.equal([oldKid]);

    const res = await box.json('POST', '/keys/rotate', {}, root);
    expect(res.status, res.text).to.equal(200);
    const { rotated } = res.body as { rotated: { alg: string; kid: string; retired: string[] } };
    expect(rotated).to.deep.include({ alg: 'ES256', retired: [oldKid] });
    expect(rotated.kid).not.to.equal(oldKid);

    const listed = res.body.keys as Key[];
    expect(actives(listed)).to.deep.include({ ES256: [rotated.kid] });
    const old = listed.find((k) => k.kid === oldKid)!;
    expect(old).to.include({ state: 'retired' });
    expect(old.signs).to.deep.equal([]);
    // Published at least an ID token's life after it retired, and as long as the 600 s token it signed lives.
    expect(Date.parse(old.published_until!) - Date.parse(old.retired_at!)).to.equal(86_400_000);

    const after = await token();
    expect(decodeProtectedHeader(after).kid).to.equal(rotated.kid);
    const set = await jwks();
    await jwtVerify(before, set, { issuer: box.url });
    await jwtVerify(after, set, { issuer: box.url });
    for (const t of [before, after]) expect((await box.json('GET', '/Client/signed', undefined, t)).status).to.equal(200);

    const audited = await eventually('the rotation in the audit log', async () =>
      box.logs
        .filter((l) => l.includes('"event":"signing_key"'))
        .map((l) => JSON.parse(l) as Record<string, any>)
        .find((e) => e.kid === rotated.kid),
    );
    expect(audited).to.deep.include({ audit: true, action: 'rotated', alg: 'ES256', retired: [oldKid] });
    expect(audited.by).to.include({ client: 'root' });
  });

  it('{alg} rotates that algorithm only; a wrong alg or another field is 422', async function () {
    const before = actives(await keys());
    const res = await box.json('POST', '/keys/rotate', { alg: 'RS256' }, root);
    expect(res.status, res.text).to.equal(200);
    const after = actives(res.body.keys as Key[]);
    expect(after.RS256).not.to.deep.equal(before.RS256);
    expect(after.ES256).to.deep.equal(before.ES256);
    expect(after.EdDSA).to.deep.equal(before.EdDSA);
    // No body at all: the access tokens' algorithm.
    const bare = await box.request('POST', '/keys/rotate', { headers: { Authorization: `Bearer ${root}` } });
    expect(bare.status, bare.text).to.equal(200);
    expect(bare.body.rotated.alg).to.equal('ES256');
    const bad = await box.json('POST', '/keys/rotate', { alg: 'HS256' }, root);
    expect(bad.status).to.equal(422);
    expect(bad.body.errors.alg).to.deep.equal(['must be one of ES256, RS256, EdDSA']);
    const other = await box.json('POST', '/keys/rotate', { alg: 'ES256', private_jwk: {} }, root);
    expect(other.status).to.equal(422);
    expect(other.body.errors).to.have.key('private_jwk');
  });

  it('many rotations at once leave exactly one active key per algorithm, every one still published', async function () {
    const answers = await Promise.all(Array.from({ length: 12 }, () => box.json('POST', '/keys/rotate', {}, root)));
    expect(answers.map((a) => a.status)).to.deep.equal(Array(12).fill(200));
    const listed = await keys();
    for (const kids of Object.values(actives(listed))) expect(kids).to.have.length(1);
    const newKids = answers.map((a) => a.body.rotated.kid as string);
    expect(new Set(newKids).size).to.equal(12);
    // The one left active is the last rotation's; each other one retired by the rotation after it.
    const retiredBy = answers.flatMap((a) => a.body.rotated.retired as string[]);
    expect(newKids.filter((k) => !retiredBy.includes(k))).to.deep.equal(actives(listed).ES256);
    const published = (await box.json('GET', '/.well-known/jwks.json')).body.keys.map((k: { kid: string }) => k.kid);
    expect(published).to.include.members(newKids);
    const { secret } = await box.addClient('after-race', { auth: { client_credentials: { token_format: 'jwt' } } });
    const token = (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('after-race', secret) })).body
      .access_token as string;
    expect(decodeProtectedHeader(token).kid).to.equal(actives(listed).ES256![0]);
    await jwtVerify(token, await jwks(), { issuer: box.url });
  });
});

describe('GET /settings never holds a secret the box was started with', function () {
  this.timeout(60_000);
  const secrets = {
    root: `root-${randomBytes(12).toString('hex')}`,
    admin: `admin-${randomBytes(12).toString('hex')}`,
    smtp: `smtp-${randomBytes(12).toString('hex')}`,
    factorKey: randomBytes(32),
    provider: `provider-${randomBytes(12).toString('hex')}`,
  };
  const signingPem = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
  let box: Box;
  let root: string;
  boxForSuite(
    (b, r) => {
      [box, root] = [b, r];
    },
    {
      env: {
        BOXAUTH_ROOT_CLIENT_SECRET: secrets.root,
        BOXAUTH_ADMIN_EMAIL: 'admin@example.com',
        BOXAUTH_ADMIN_PASSWORD: secrets.admin,
        BOXAUTH_SMTP_URL: 'smtp://mailer@127.0.0.1:2525',
        BOXAUTH_SMTP_PASSWORD: secrets.smtp,
        BOXAUTH_SMTP_FROM: 'boxauth <no-reply@example.com>',
        BOXAUTH_FACTOR_KEY: secrets.factorKey.toString('base64'),
        BOXAUTH_SIGNING_KEY: signingPem,
        BOXAUTH_BROWSER_SESSION_HOURS: '9',
        BOXAUTH_AUTH_CODE_TTL_SECONDS: '45',
        BOXAUTH_REGISTRATION: 'true',
        BOXAUTH_TRUSTED_PROXIES: '10.0.0.0/8, 192.0.2.7',
      },
    },
  );

  it('says the lifetimes, registration, mail and trust as set, and none of the secrets', async function () {
    const provider = await box.json(
      'PUT',
      '/IdentityProvider/elsewhere',
      {
        type: 'oauth2',
        oauth2: {
          authorizationUrl: 'https://idp.example/authorize',
          tokenUrl: 'https://idp.example/token',
          userinfoUrl: 'https://idp.example/userinfo',
          clientId: 'box',
        },
        secret: secrets.provider,
      },
      root,
    );
    expect(provider.status, provider.text).to.equal(201);
    const res = await box.json('GET', '/settings', undefined, root);
    expect(res.status, res.text).to.equal(200);
    const s = res.body;
    expect(s.issuer).to.equal(box.url);
    expect(s.sessions.browser_session_hours).to.equal(9);
    expect(s.tokens).to.include({ authorization_code_seconds: 45, id_token_default_seconds: 3600, access_token_default_seconds: null });
    expect(s.registration).to.include({ enabled: true, group: 'users', verify: 'before-sign-in' });
    expect(s.mail).to.include({
      configured: true,
      host: '127.0.0.1',
      port: 2525,
      security: 'starttls',
      from: 'boxauth <no-reply@example.com>',
    });
    expect(s.trust.trusted_proxies).to.deep.equal(['10.0.0.0/8', '192.0.2.7/32']);
    expect(s.signing).to.include({ access_token_alg: 'ES256', external_key: true });
    expect(s.database).to.include({ embedded: false });

    const databasePassword = decodeURIComponent(new URL(box.databaseUrl!).password);
    expect(databasePassword).not.to.equal('');
    const pemBody = signingPem.split('\n')[1]!;
    const found = {
      'root client secret': secrets.root,
      'admin password': secrets.admin,
      'SMTP password': secrets.smtp,
      'SMTP user': 'mailer',
      'factor key (base64)': secrets.factorKey.toString('base64'),
      'factor key (hex)': secrets.factorKey.toString('hex'),
      'identity provider secret': secrets.provider,
      'database password': databasePassword,
      'signing key (PEM)': pemBody,
      'root token': root,
    };
    for (const [what, secret] of Object.entries(found)) expect(res.text, what).not.to.include(secret);
    for (const [what, secret] of Object.entries(found)) expect(res.text, what).not.to.include(encodeURIComponent(secret));
  });

  it("refuses to rotate BOXAUTH_SIGNING_KEY's algorithm (409) and rotates the others", async function () {
    const refused = await box.json('POST', '/keys/rotate', {}, root);
    expect(refused.status).to.equal(409);
    expect(refused.body.error_description).to.include("the ES256 key is BOXAUTH_SIGNING_KEY's");
    const listed = (await box.json('GET', '/keys', undefined, root)).body.keys as Key[];
    expect(listed.find((k) => k.alg === 'ES256' && k.state === 'active')).to.include({ external: true, rotates_at: null });
    expect((await box.json('POST', '/keys/rotate', { alg: 'EdDSA' }, root)).status).to.equal(200);
  });
});

describe("the box's own rotations and drops of keys are audited", function () {
  this.timeout(60_000);
  let box: Box;
  let root: string;
  boxForSuite(
    (b, r) => {
      [box, root] = [b, r];
    },
    { env: { BOXAUTH_PURGE_INTERVAL_SECONDS: '5' } },
  );

  it('a key due after BOXAUTH_KEY_ROTATION_DAYS is rotated by the upkeep, without `by`; a retired key nothing needs is dropped', async function () {
    // Before the first upkeep (5 s after the start): an EdDSA key retired two days ago, and an ES256 key 40 days old.
    const retired = (await box.json('POST', '/keys/rotate', { alg: 'EdDSA' }, root)).body.rotated.retired as string[];
    const db = new pg.Client({ connectionString: box.databaseUrl });
    await db.connect();
    try {
      await db.query("UPDATE signing_keys SET retired_at = now() - interval '2 days' WHERE id = ANY($1)", [retired]);
      await db.query("UPDATE signing_keys SET created_at = now() - interval '40 days' WHERE alg = 'ES256'");
    } finally {
      await db.end();
    }
    const events = await eventually('the upkeep to rotate and drop', async () => {
      const lines = box.logs.filter((l) => l.includes('"event":"signing_key"')).map((l) => JSON.parse(l) as Record<string, any>);
      const rotated = lines.find((e) => e.action === 'rotated' && e.alg === 'ES256');
      const dropped = lines.find((e) => e.action === 'dropped');
      return rotated && dropped && { rotated, dropped };
    });
    expect(events.rotated).not.to.have.property('by');
    expect(events.dropped.kids).to.deep.equal(retired);
    const listed = (await box.json('GET', '/keys', undefined, root)).body.keys as Key[];
    expect(listed.map((k) => k.kid)).not.to.include.members(retired);
    expect(listed.find((k) => k.alg === 'ES256' && k.state === 'active')!.kid).to.equal(events.rotated.kid);
  });
});
