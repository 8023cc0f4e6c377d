// The durable ceilings of `make bench`: the bare ceiling (./ceiling.ts) plus what makes
// a token durable and revocable — a row committed in PostgreSQL before the answer —
// written as well as bare code can: concurrent requests share one multi-row statement
// and its commit (group commit), with CEILING_IN_FLIGHT commits in flight per process
// (make bench measured 1, 2, 4 and 8 and runs the best; docs/performance.md). One file,
// four modes (CEILING_MODE), since they share all but the statement:
//
// - `token`: client_credentials → the same ES256 JWT as the bare ceiling, and its row.
// - `refresh`: refresh_token → the holder's sliding expiration updated and a new opaque
//   access token's row inserted, in one statement; the holders are seeded at start
//   (CEILING_REFRESH_TOKENS, the tokens `ceiling-refresh-<i>`).
// - `dpop`: client_credentials with a DPoP proof (RFC 9449) → the proof's ES256
//   signature verified (its key parsed once, as the box does), its jti spent in a replay
//   ledger and the bound opaque token's row inserted, in one statement.
// - `assertion`: client_credentials, the client authenticated by a fresh ES256 client
//   assertion (private_key_jwt, RFC 7523) instead of a secret → the assertion verified
//   with the client's key (CEILING_ASSERTION_JWK) and its claims checked, the same JWT as
//   `token` signed, its jti spent in the ledger and the token's row inserted, in one
//   statement: the physical limit of issue 65's private_key_jwt row.
//
// The rows go to tables made like the box's (`LIKE sessions INCLUDING ALL`, `LIKE
// dpop_proofs INCLUDING ALL`: the same columns, defaults and indexes, no triggers nor
// foreign keys), in the bench's database (CEILING_DATABASE_URL), with its
// synchronous_commit, the one the box commits with. What the box does beyond this (its
// policies, caches, grant locks, logs, metrics) is what a ratio to these ceilings shows.
import { createHash, createPublicKey, randomBytes, randomUUID, verify, type JsonWebKey, type KeyObject } from 'node:crypto';
import cluster from 'node:cluster';
import pg from 'pg';
import { inWorkers } from './ceiling-verify.js';
import { issuer, jwtSigner, port, send, tokenServer, type Authenticate, type TokenRequest } from './ceiling.js';

const mode = process.env.CEILING_MODE ?? 'token';
const inFlight = Number(process.env.CEILING_IN_FLIGHT ?? 2);
const refreshTokens = Number(process.env.CEILING_REFRESH_TOKENS ?? 100_000);
const databaseUrl = process.env.CEILING_DATABASE_URL!;

/** Concurrent items share one statement; at most `maxInFlight` statements run at once; each item waits for its own commit. */
class GroupCommit<I, R> {
  private queue: { item: I; resolve: (r: R) => void; reject: (e: Error) => void }[] = [];
  private running = 0;

  constructor(
    private readonly run: (items: I[]) => Promise<R[]>,
    private readonly maxInFlight: number,
  ) {}

  submit(item: I): Promise<R> {
    return new Promise((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.flush();
    });
  }

  private flush(): void {
    while (this.running < this.maxInFlight && this.queue.length > 0) {
      const batch = this.queue.splice(0, 500);
      this.running++;
      this.run(batch.map((b) => b.item))
        .then(
          (results) => batch.forEach((b, i) => b.resolve(results[i]!)),
          (err: Error) => batch.forEach((b) => b.reject(err)),
        )
        .finally(() => {
          this.running--;
          this.flush();
        });
    }
  }
}

/** Time-ordered ids (UUIDv7, as the box's sessions): new rows land at the right edge of the primary key. */
function uuidv7(): string {
  const random = randomUUID();
  const time = Date.now().toString(16).padStart(12, '0');
  return `${time.slice(0, 8)}-${time.slice(8)}-7${random.slice(15)}`;
}

let pool = Buffer.alloc(0);
/** 32 random bytes, base64url: an opaque token (the CSPRNG read 8 KiB at a time). */
function opaqueToken(): string {
  if (pool.length < 32) pool = randomBytes(8192);
  const token = pool.subarray(0, 32).toString('base64url');
  pool = pool.subarray(32);
  return token;
}

const sha256 = (s: string): Buffer => createHash('sha256').update(s).digest();
const b64json = (s: string): Record<string, unknown> => JSON.parse(Buffer.from(s, 'base64url').toString('utf8')) as Record<string, unknown>;

/** The purge time of a refresh holder, rounded up to the hour as the box rounds it: the update then stays HOT. */
const HOLDER_PURGE_AT = `date_trunc('hour', now() + interval '1 day') + interval '1 hour'`;

async function prepareTables(): Promise<void> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    await db.query(`DROP TABLE IF EXISTS ceiling_sessions, ceiling_proofs`);
    await db.query(`CREATE TABLE ceiling_sessions (LIKE sessions INCLUDING ALL)`);
    await db.query(`CREATE TABLE ceiling_proofs (LIKE dpop_proofs INCLUDING ALL)`);
    if (mode === 'refresh') {
      await db.query(
        `INSERT INTO ceiling_sessions (id, type, origin, client_id, start, exp, access_token_hash, refresh_token_hash,
           refresh_token_exp, family, purge_at)
         SELECT id, 'client_credentials', 'client_credentials', $2, now(), now() + interval '1 hour',
           sha256(('ceiling-access-' || i)::bytea), sha256(('ceiling-refresh-' || i)::bytea), now() + interval '1 day', id,
           ${HOLDER_PURGE_AT}
         FROM (SELECT gen_random_uuid() AS id, i FROM generate_series(1, $1::int) AS i) AS s`,
        [refreshTokens, process.env.CEILING_CLIENT_ID ?? 'bench'],
      );
      await db.query('VACUUM ANALYZE ceiling_sessions');
    }
  } finally {
    await db.end();
  }
}

/** token: a JWT and its row (a JWT's row has no token digest: it is found by its jti, the row's id). */
function tokenGrant(db: pg.Pool): (r: TokenRequest) => void {
  const signJwt = jwtSigner();
  const rows = new GroupCommit<{ id: string; clientId: string; audience: string | null }, void>(async (items) => {
    await db.query({
      name: 'ceiling-token',
      text: `INSERT INTO ceiling_sessions (id, type, origin, client_id, audience, start, exp, family, kid, purge_at)
             SELECT id, 'client_credentials', 'client_credentials', client_id, audience, now(), now() + interval '1 hour',
               id, 'ceiling', now() + interval '1 hour'
             FROM unnest($1::uuid[], $2::text[], $3::text[]) AS n(id, client_id, audience)`,
      values: [items.map((i) => i.id), items.map((i) => i.clientId), items.map((i) => i.audience)],
    });
    return items.map(() => undefined);
  }, inFlight);
  return ({ res, params, clientId }) => {
    if (params.get('grant_type') !== 'client_credentials') return send(res, 400, { error: 'unsupported_grant_type' });
    const id = uuidv7();
    const audience = params.get('audience');
    const token = signJwt({ sub: clientId, audience, now: Math.floor(Date.now() / 1000), jti: id });
    rows.submit({ id, clientId, audience }).then(
      () => send(res, 200, { access_token: token, token_type: 'Bearer', expires_in: 3600 }),
      () => send(res, 500, { error: 'server_error' }),
    );
  };
}

/** refresh: the holder updated (if usable) and the new access token's row inserted, one statement per batch. */
function refreshGrant(db: pg.Pool): (r: TokenRequest) => void {
  const rows = new GroupCommit<{ refreshHash: Buffer; id: string; accessHash: Buffer }, boolean>(async (items) => {
    const { rows: inserted } = await db.query<{ id: string }>({
      name: 'ceiling-refresh',
      text: `WITH u AS (SELECT * FROM unnest($1::bytea[], $2::uuid[], $3::bytea[]) AS u(refresh_hash, id, access_hash)),
             held AS (
               UPDATE ceiling_sessions s SET refresh_token_exp = now() + interval '1 day', purge_at = ${HOLDER_PURGE_AT}
               FROM u WHERE s.refresh_token_hash = u.refresh_hash AND s.active
                 AND (s.refresh_token_exp IS NULL OR s.refresh_token_exp > now())
               RETURNING u.id, u.access_hash, s.id AS parent, s.family, s.client_id
             )
             INSERT INTO ceiling_sessions (id, type, origin, client_id, start, exp, access_token_hash, parent, family, purge_at)
             SELECT id, 'refresh_token', 'client_credentials', client_id, now(), now() + interval '1 hour', access_hash, parent,
               family, now() + interval '1 hour'
             FROM held RETURNING id`,
      // Padded with nulls (they match no holder) to the ten elements PostgreSQL costs a generic plan
      // for: shorter arrays kept a custom plan, planned at every batch (about half of them).
      values: [items.map((i) => i.refreshHash), items.map((i) => i.id), items.map((i) => i.accessHash)].map((column) => [
        ...column,
        ...new Array<null>(Math.max(0, 10 - items.length)).fill(null),
      ]),
    });
    const ids = new Set(inserted.map((r) => r.id));
    return items.map((i) => ids.has(i.id));
  }, inFlight);
  return ({ res, params }) => {
    const refreshToken = params.get('refresh_token');
    if (params.get('grant_type') !== 'refresh_token' || !refreshToken) return send(res, 400, { error: 'unsupported_grant_type' });
    const accessToken = opaqueToken();
    rows.submit({ refreshHash: sha256(refreshToken), id: uuidv7(), accessHash: sha256(accessToken) }).then(
      (applied) =>
        applied
          ? send(res, 200, { access_token: accessToken, token_type: 'Bearer', expires_in: 3600, refresh_token: refreshToken })
          : send(res, 400, { error: 'invalid_grant' }),
      () => send(res, 500, { error: 'server_error' }),
    );
  };
}

/** A DPoP proof of a POST to the token endpoint checked as RFC 9449 §4.3 asks: its key, signature, htm, htu, iat and jti. */
function proofChecker(): (proof: string | undefined) => { jkt: string; jti: string } | undefined {
  const keys = new Map<string, { key: KeyObject; jkt: string } | undefined>();
  const htu = `${issuer}/auth/token`;
  const keyOf = (encodedHeader: string): { key: KeyObject; jkt: string } | undefined => {
    const header = b64json(encodedHeader) as { typ?: string; alg?: string; jwk?: { kty: string; crv: string; x: string; y: string } };
    if (header.typ !== 'dpop+jwt' || header.alg !== 'ES256' || header.jwk?.kty !== 'EC') return undefined;
    const { crv, kty, x, y } = header.jwk;
    const jkt = sha256(JSON.stringify({ crv, kty, x, y })).toString('base64url');
    return { key: createPublicKey({ key: { crv, kty, x, y }, format: 'jwk' }), jkt };
  };
  return (proof) => {
    const [header, payload, signature] = (proof ?? '').split('.');
    if (!header || !payload || !signature) return undefined;
    if (!keys.has(header)) keys.set(header, keyOf(header));
    const key = keys.get(header);
    if (!key) return undefined;
    const signed = Buffer.from(`${header}.${payload}`, 'latin1');
    if (!verify('sha256', signed, { key: key.key, dsaEncoding: 'ieee-p1363' }, Buffer.from(signature, 'base64url'))) return undefined;
    const { jti, htm, htu: claimed, iat } = b64json(payload);
    if (typeof jti !== 'string' || htm !== 'POST' || claimed !== htu || typeof iat !== 'number') return undefined;
    if (Math.abs(Date.now() / 1000 - iat) > 60) return undefined;
    return { jkt: key.jkt, jti };
  };
}

/**
 * dpop: the proof's jti spent and the bound token's row inserted in one statement; a spent jti (a replay, or a
 * second copy in the same batch: DISTINCT ON) inserts nothing.
 */
function dpopGrant(db: pg.Pool): (r: TokenRequest) => void {
  const checkProof = proofChecker();
  const rows = new GroupCommit<{ id: string; clientId: string; accessHash: Buffer; jkt: string; digest: Buffer }, boolean>(
    async (items) => {
      const { rows: inserted } = await db.query<{ id: string }>({
        name: 'ceiling-dpop',
        text: `WITH spent AS (
               INSERT INTO ceiling_proofs (digest, expires_at) SELECT digest, now() + interval '2 minutes' FROM unnest($5::bytea[]) AS d(digest)
               ON CONFLICT (digest) DO NOTHING RETURNING digest
             )
             INSERT INTO ceiling_sessions (id, type, origin, client_id, start, exp, access_token_hash, family, purge_at, jkt)
             SELECT DISTINCT ON (digest) id, 'client_credentials', 'client_credentials', client_id, now(), now() + interval '1 hour',
               access_hash, id, now() + interval '1 hour', jkt
             FROM unnest($1::uuid[], $2::text[], $3::bytea[], $4::text[], $5::bytea[]) AS n(id, client_id, access_hash, jkt, digest)
             WHERE n.digest IN (SELECT digest FROM spent) RETURNING id`,
        values: [
          items.map((i) => i.id),
          items.map((i) => i.clientId),
          items.map((i) => i.accessHash),
          items.map((i) => i.jkt),
          items.map((i) => i.digest),
        ],
      });
      const ids = new Set(inserted.map((r) => r.id));
      return items.map((i) => ids.has(i.id));
    },
    inFlight,
  );
  return ({ req, res, params, clientId }) => {
    if (params.get('grant_type') !== 'client_credentials') return send(res, 400, { error: 'unsupported_grant_type' });
    const proof = checkProof(req.headers.dpop as string | undefined);
    if (!proof) return send(res, 400, { error: 'invalid_dpop_proof' });
    const accessToken = opaqueToken();
    const row = { id: uuidv7(), clientId, accessHash: sha256(accessToken), jkt: proof.jkt, digest: sha256(`${proof.jkt}.${proof.jti}`) };
    rows.submit(row).then(
      (spent) =>
        spent
          ? send(res, 200, { access_token: accessToken, token_type: 'DPoP', expires_in: 3600 })
          : send(res, 400, { error: 'invalid_dpop_proof', error_description: 'the DPoP proof was already used' }),
      () => send(res, 500, { error: 'server_error' }),
    );
  };
}

/**
 * A client assertion checked as the box checks one (RFC 7523 §3): its ES256 signature with the client's key, then
 * iss and sub the client, aud the box, exp within five minutes, a jti.
 */
function assertionChecker(): Authenticate {
  const clientId = process.env.CEILING_CLIENT_ID ?? 'bench';
  const audience = process.env.CEILING_ASSERTION_AUDIENCE;
  const key = createPublicKey({ key: JSON.parse(process.env.CEILING_ASSERTION_JWK ?? '{}') as JsonWebKey, format: 'jwk' });
  return (_req, params) => {
    if (params.get('client_assertion_type') !== 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer') return undefined;
    const [header, payload, signature] = (params.get('client_assertion') ?? '').split('.');
    if (!header || !payload || !signature || b64json(header).alg !== 'ES256') return undefined;
    const signed = Buffer.from(`${header}.${payload}`, 'latin1');
    if (!verify('sha256', signed, { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(signature, 'base64url'))) return undefined;
    const { iss, sub, aud, exp, jti } = b64json(payload);
    const now = Date.now() / 1000;
    if (iss !== clientId || sub !== clientId || aud !== audience || typeof jti !== 'string') return undefined;
    if (typeof exp !== 'number' || exp + 60 <= now || exp - now > 360) return undefined;
    return { clientId, assertionJti: jti };
  };
}

/** assertion: the assertion's jti spent and the JWT's row inserted in one statement; a spent jti inserts nothing. */
function assertionGrant(db: pg.Pool): (r: TokenRequest) => void {
  const signJwt = jwtSigner();
  const rows = new GroupCommit<{ id: string; clientId: string; audience: string | null; digest: Buffer }, boolean>(async (items) => {
    const { rows: inserted } = await db.query<{ id: string }>({
      name: 'ceiling-assertion',
      text: `WITH spent AS (
               INSERT INTO ceiling_proofs (digest, expires_at) SELECT digest, now() + interval '6 minutes' FROM unnest($4::bytea[]) AS d(digest)
               ON CONFLICT (digest) DO NOTHING RETURNING digest
             )
             INSERT INTO ceiling_sessions (id, type, origin, client_id, audience, start, exp, family, kid, purge_at)
             SELECT DISTINCT ON (digest) id, 'client_credentials', 'client_credentials', client_id, audience, now(),
               now() + interval '1 hour', id, 'ceiling', now() + interval '1 hour'
             FROM unnest($1::uuid[], $2::text[], $3::text[], $4::bytea[]) AS n(id, client_id, audience, digest)
             WHERE n.digest IN (SELECT digest FROM spent) RETURNING id`,
      values: [items.map((i) => i.id), items.map((i) => i.clientId), items.map((i) => i.audience), items.map((i) => i.digest)],
    });
    const ids = new Set(inserted.map((r) => r.id));
    return items.map((i) => ids.has(i.id));
  }, inFlight);
  return ({ res, params, clientId, assertionJti }) => {
    if (params.get('grant_type') !== 'client_credentials') return send(res, 400, { error: 'unsupported_grant_type' });
    const id = uuidv7();
    const audience = params.get('audience');
    const token = signJwt({ sub: clientId, audience, now: Math.floor(Date.now() / 1000), jti: id });
    rows.submit({ id, clientId, audience, digest: sha256(JSON.stringify([clientId, assertionJti])) }).then(
      (spent) =>
        spent
          ? send(res, 200, { access_token: token, token_type: 'Bearer', expires_in: 3600 })
          : send(res, 401, { error: 'invalid_client', error_description: 'replayed jti' }),
      () => send(res, 500, { error: 'server_error' }),
    );
  };
}

const GRANTS: Record<string, (db: pg.Pool) => (r: TokenRequest) => void> = {
  token: tokenGrant,
  refresh: refreshGrant,
  dpop: dpopGrant,
  assertion: assertionGrant,
};

async function serve(): Promise<void> {
  const grant = GRANTS[mode];
  if (!grant) throw new Error(`CEILING_MODE: token, refresh, dpop or assertion, not ${mode}`);
  const db = new pg.Pool({ connectionString: databaseUrl, max: inFlight });
  tokenServer(grant(db), mode === 'assertion' ? assertionChecker() : undefined).listen(port, '127.0.0.1');
  return Promise.resolve();
}

// The primary makes the tables before its workers start (one worker: it is the primary).
if (cluster.isPrimary) await prepareTables();
await inWorkers(serve);
