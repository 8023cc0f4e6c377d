// What `make bench` measures: the clients it registers, the tokens it obtains
// beforehand, and for each scenario the requests wrk sends and a check of one
// answer (so a scenario never measures a stream of errors).
import crypto, { randomBytes, type JsonWebKey } from 'node:crypto';
import pg from 'pg';
import { generateKeyPair, signingKey } from '../../api/credentials/jwt.js';
import { mint } from '../../api/credentials/tokens.js';
import { TOKEN_TYPE } from '../../api/credentials/exchange/parties.js';
import { TOKEN_EXCHANGE } from '../../api/oauth/grants/token-exchange.js';
import { TXN_TOKEN_TYPE } from '../../api/credentials/txn-tokens.js';
import { JWT_BEARER } from '../../api/credentials/workload/assertion.js';
import { JWT_SPIFFE } from '../../api/oauth/spiffe.js';
import { insertSessions } from '../../api/store/sessions.js';
import type { Client } from '../../api/types.js';
import { basic, type Box, type JsonResponse } from '../support/box.js';
import type { TestIssuer } from '../support/issuer.js';
import { clientDocuments } from '../support/client-documents.js';
import { testCa } from '../support/tls.js';
import type { BenchRequest } from './load.js';
import { LOAD } from './measure.js';
import { hookedJwt, hookRow, type BenchHooks } from './hook-bench.js';

/** What a row's throughput is compared with: the bare ceiling, a durable one (ceiling-durable.ts's modes), the cc_jwt row. */
export type Baseline = 'bare' | 'token' | 'refresh' | 'dpop' | 'assertion' | 'cc_jwt';
export interface Goal {
  of: Baseline;
  min: number;
}

export interface Scenario {
  key: string;
  title: string;
  requests: BenchRequest[];
  /** Throws unless the answer is what a client of this scenario expects. */
  check(res: JsonResponse): void;
  /** Its durable ceiling (./ceiling-durable.ts), or for an exchange the cc_jwt row of the same run: the second ratio. */
  durable?: Exclude<Baseline, 'bare'>;
  /** Issue 69's (or 65's) goal of the row's throughput: at least `min` × `of`. */
  goal?: Goal;
  /** p99 ≤ 25 ms is a goal of every row but those that say false here (a password hash, slow by design). */
  latencyGoal?: false;
  /**
   * For a row whose requests are good once (a client assertion's jti): as many as it may send, made
   * just before it runs and each sent once, as the DPoP rows do (./dpop-bench.ts measureOnce).
   */
  fresh?: () => BenchRequest[];
  /** What exists only while the row runs (a Hook: ./hook-bench.ts), made before its sample is checked and undone after. */
  around?: { before(): Promise<void>; after(): Promise<void> };
}

const FORM = 'application/x-www-form-urlencoded';
const ACCESS_TOKEN_TYPE = TOKEN_TYPE.accessToken;
export const AUDIENCE = 'https://api.bench.example';
const form = (params: Record<string, string>): string => new URLSearchParams(params).toString();

export interface Seeded {
  opaque: { id: string; secret: string };
  jwt: { id: string; secret: string };
  refreshClient: { id: string; secret: string };
  refreshTokens: string[];
  opaqueTokens: string[];
  readerToken: string;
  workloadAssertion: string | undefined;
  /** A client with its own ES256 key (private_key_jwt, its public `jwk`), and a fresh assertion of it for `audience` at each call. */
  privateKeyJwt: { id: string; jwk: JsonWebKey; audience: string; assertion: () => string };
  /** A client bound to a SPIFFE ID: the JWT-SVID an agent hands out for minutes (no jti), and fresh ones with a jti. */
  spiffe: { svid: string; svidWithJti: () => string } | undefined;
  /** A client that exchanges bench-opaque's tokens (RFC 8693), acting with its own. */
  exchange: { client: { id: string; secret: string }; actorToken: string };
  /** A workload asking for Transaction Tokens (draft-ietf-oauth-transaction-tokens-10) for its own calls: its access tokens, each for a transaction. */
  txn: { client: { id: string; secret: string }; subjectTokens: string[] };
  /** A person's refresh tokens (JWT access tokens) at two clients alike but for three shaped claims (Client.claims) at one. */
  person: Record<'plain' | 'claims', { client: { id: string; secret: string }; refreshTokens: string[] }>;
  /** Clients like bench-jwt whose tokens a Hook answering after 5 ms, or 50 ms, is asked about while their row runs. */
  hooked?: { client: { id: string; secret: string }; ms: number; around: NonNullable<Scenario['around']> }[];
}

const expectStatus = (res: JsonResponse, status: number): void => {
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${res.text.slice(0, 300)}`);
};

export async function inBatches<T>(n: number, size: number, make: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < n; i += size) out.push(...(await Promise.all(Array.from({ length: Math.min(size, n - i) }, (_, j) => make(i + j)))));
  return out;
}

export async function token(box: Box, client: { id: string; secret: string }, extra: Record<string, string> = {}): Promise<JsonResponse> {
  const res = await box.form(
    '/auth/token',
    { grant_type: 'client_credentials', ...extra },
    { Authorization: basic(client.id, client.secret) },
  );
  expectStatus(res, 200);
  return res;
}

/**
 * Refresh tokens of `client`, each in a session of its own, written as the
 * token endpoint writes them (mint + insertSessions) but straight to the
 * database: an app presents its refresh token when its access token expires,
 * so a busy box sees many tokens each used now and then, not a few used
 * continually (which would measure row-lock queues on a handful of rows).
 */
async function refreshTokens(
  databaseUrl: string,
  client: Client,
  n: number,
  grant: { origin: 'client_credentials' | 'authorization_code'; userId?: number } = { origin: 'client_credentials' },
): Promise<string[]> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const key = signingKey('unused-for-opaque-tokens', 'ES256', privateKey, publicKey);
  const settings = client.auth![grant.origin]!;
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  const tokens: string[] = [];
  try {
    for (let i = 0; i < n; i += 5000) {
      const minted = Array.from({ length: Math.min(5000, n - i) }, () =>
        mint(
          { type: grant.origin, origin: grant.origin, client, settings, refresh: true, userId: grant.userId ?? null },
          'http://bench',
          key,
        ),
      );
      await insertSessions(
        pool,
        minted.map((m) => m.session),
      );
      tokens.push(...minted.map((m) => m.response.refresh_token!));
    }
  } finally {
    await pool.end();
  }
  return tokens;
}

const secret = (): string => randomBytes(32).toString('base64url');
const hour = { access_token_expiration: 3600 };

/** The bench's two client_credentials clients, without a policy: opaque tokens and ES256 JWTs, for an hour. (make bench-peers too) */
export async function tokenClients(box: Box): Promise<{ opaque: { id: string; secret: string }; jwt: { id: string; secret: string } }> {
  const opaque = await box.addClient('bench-opaque', { auth: { client_credentials: hour } }, { policy: false, secret: secret() });
  const jwt = await box.addClient(
    'bench-jwt',
    { auth: { client_credentials: { ...hour, token_format: 'jwt' } } },
    { policy: false, secret: secret() },
  );
  return { opaque, jwt };
}

/** Three claims an admin shapes, of the kinds docs/concepts/access-control.md shows: roles of groups, a tenant of data, a flag of the grant. */
export const BENCH_CLAIMS = {
  roles: 'user.groups.filter(g, g.startsWith("wiki-")).map(g, g.substring(5))',
  tenant: 'user.data.tenant',
  mfa: 'grant.amr.exists(a, a == "mfa")',
};

/**
 * A person in groups, with data, and their refresh tokens at two clients (JWT access tokens) that
 * differ only in the three claims one of them shapes: the rows refresh_person and refresh_claims.
 */
async function personTokens(box: Box, databaseUrl: string, n: number): Promise<Seeded['person']> {
  const root = await box.rootToken();
  const groups: number[] = [];
  for (const name of ['wiki-editors', 'wiki-admins', 'payroll', 'staff']) {
    const res = await box.json('POST', '/groups', { name }, root);
    expectStatus(res, 201);
    groups.push(res.body.id as number);
  }
  const person = await box.json(
    'POST',
    '/users',
    { email: 'bench-person@users.example', password: 'correct horse battery staple', 'group-ids': groups, data: '{"tenant": "acme"}' },
    root,
  );
  expectStatus(person, 201);
  const spec = {
    grant_types: ['authorization_code', 'refresh_token'],
    auth: {
      authorization_code: { ...hour, redirect_uri: 'https://app.bench.example/cb', token_format: 'jwt', refresh_token: true },
    },
  };
  const out: Partial<Seeded['person']> = {};
  for (const [which, claims] of [
    ['plain', undefined],
    ['claims', BENCH_CLAIMS],
  ] as const) {
    const body = { ...spec, ...(claims ? { claims } : {}) };
    const client = await box.addClient(`bench-person-${which}`, body, { policy: false, secret: secret() });
    const record = { id: client.id, resourceType: 'Client', ...body } as Client;
    out[which] = {
      client,
      refreshTokens: await refreshTokens(databaseUrl, record, n, { origin: 'authorization_code', userId: person.body.id as number }),
    };
  }
  return out as Seeded['person'];
}

/** Registers the bench's clients through the API and obtains the tokens its scenarios present. */
/**
 * A SPIFFE trust domain of the bench's own: a bundle endpoint (HTTPS, a test CA) serving one ES256
 * JWT-SVID key, the box's BOXAUTH_SPIFFE_TRUST_DOMAINS for it, and JWT-SVIDs it signs.
 */
export async function benchTrustDomain(): Promise<{
  setting: string;
  sign: (claims: Record<string, unknown>) => string;
  close: () => Promise<void>;
}> {
  const ca = testCa();
  const docs = await clientDocuments(ca);
  const { privateKey, publicKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  docs.serve('/bundle', {
    body: {
      keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'bench', use: 'jwt-svid' }],
      spiffe_sequence: 1,
      spiffe_refresh_hint: 300,
    },
  });
  const header = Buffer.from(JSON.stringify({ alg: 'ES256', kid: 'bench', typ: 'JWT' })).toString('base64url');
  return {
    setting: JSON.stringify([
      { trustDomain: 'bench.test', bundleEndpointUrl: `${docs.origin}/bundle`, caBundle: ca.pem, allowedAddresses: ['127.0.0.1/32'] },
    ]),
    sign: (claims) => {
      const input = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
      return `${input}.${crypto.sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
    },
    close: () => docs.close(),
  };
}

/** A client bound to a SPIFFE ID of the bench's trust domain, and JWT-SVIDs of it. */
async function spiffeClient(box: Box, sign: (claims: Record<string, unknown>) => string): Promise<NonNullable<Seeded['spiffe']>> {
  const sub = 'spiffe://bench.test/ns/bench/sa/app';
  const res = await box.json(
    'PUT',
    '/Client/bench-spiffe',
    { grant_types: ['client_credentials'], auth: { client_credentials: { ...hour, token_format: 'jwt' }, spiffe: { ids: [sub] } } },
    await box.rootToken(),
  );
  expectStatus(res, 201);
  const claims = (): Record<string, unknown> => {
    const now = Math.floor(Date.now() / 1000);
    return { sub, aud: [box.url], iat: now, exp: now + 3600 };
  };
  return { svid: sign(claims()), svidWithJti: () => sign({ ...claims(), jti: crypto.randomUUID() }) };
}

export async function seed(
  box: Box,
  issuer: TestIssuer | undefined,
  databaseUrl: string,
  refreshCount: number,
  spiffeSign?: (claims: Record<string, unknown>) => string,
  hooks?: BenchHooks,
): Promise<Seeded> {
  const { opaque, jwt } = await tokenClients(box);
  const refreshSpec = {
    grant_types: ['client_credentials', 'refresh_token'],
    auth: { client_credentials: { ...hour, refresh_token: true, refresh_token_expiration: 86_400 } },
  };
  const refreshClient = await box.addClient('bench-refresh', refreshSpec, { policy: false, secret: secret() });
  const reader = await box.addClient('bench-reader', {}, { secret: secret() }); // with an allow policy
  const exchanger = await box.addClient(
    'bench-exchange',
    {
      grant_types: ['client_credentials', TOKEN_EXCHANGE],
      auth: { client_credentials: hour, token_exchange: { ...hour, token_format: 'jwt' } },
    },
    { policy: false, secret: secret() },
  );
  const policy = await box.json(
    'PUT',
    '/AccessPolicy/bench-exchange',
    {
      engine: 'matcho',
      link: [{ resourceType: 'Client', id: exchanger.id }],
      matcho: { exchange: { delegation: true, audience: AUDIENCE, subject: { client_id: opaque.id }, actor: { client_id: exchanger.id } } },
    },
    await box.rootToken(),
  );
  expectStatus(policy, 201);
  const txnClient = await box.addClient(
    'bench-txn',
    { grant_types: ['client_credentials', TOKEN_EXCHANGE], scope: ['bench.txn'], auth: { client_credentials: hour } },
    { policy: false, secret: secret() },
  );
  const txnPolicy = await box.json(
    'PUT',
    '/AccessPolicy/bench-txn',
    {
      engine: 'matcho',
      link: [{ resourceType: 'Client', id: txnClient.id }],
      matcho: { exchange: { requested_token_type: TXN_TOKEN_TYPE, subject: { client_id: txnClient.id } } },
    },
    await box.rootToken(),
  );
  expectStatus(txnPolicy, 201);
  if (issuer) {
    await box.addClient(
      'bench-workload',
      {
        auth: {
          client_credentials: { ...hour, token_format: 'jwt' },
          workload: { issuer: issuer.url, serviceAccounts: [{ namespace: 'bench', name: 'app' }] },
        },
      },
      { policy: false },
    );
  }
  const refreshTokenList = await refreshTokens(
    databaseUrl,
    { id: refreshClient.id, resourceType: 'Client', ...refreshSpec } as Client,
    refreshCount,
  );
  const opaqueTokens = await inBatches(1000, 32, async () => (await token(box, opaque)).body.access_token as string);
  const readerToken = (await token(box, reader)).body.access_token as string;
  const now = Math.floor(Date.now() / 1000);
  // A projected ServiceAccount token, as a pod presents it for its whole life (an hour here).
  const workloadAssertion = issuer && (await issuer.token(box.url, 'bench', 'app', { iat: now, nbf: now, exp: now + 3600 }));
  const exchange = { client: exchanger, actorToken: (await token(box, exchanger)).body.access_token as string };
  const privateKeyJwt = await privateKeyJwtClient(box);
  const txn = {
    client: txnClient,
    subjectTokens: await inBatches(1000, 32, async () => (await token(box, txnClient, { scope: 'bench.txn' })).body.access_token as string),
  };
  const spiffe = spiffeSign && (await spiffeClient(box, spiffeSign));
  const person = await personTokens(box, databaseUrl, Math.min(refreshCount, 20_000));
  const jwtSpec = { auth: { client_credentials: { ...hour, token_format: 'jwt' } } };
  const hooked =
    hooks &&
    (await Promise.all(
      [5, 50].map(async (ms) => {
        const client = await box.addClient(`bench-hook-${ms}ms`, jwtSpec, { policy: false, secret: secret() });
        return { client, ms, around: hookRow(box, hooks, client.id, ms) };
      }),
    ));
  return {
    ...(hooked ? { hooked } : {}),
    opaque,
    jwt,
    refreshClient,
    refreshTokens: refreshTokenList,
    opaqueTokens,
    readerToken,
    workloadAssertion,
    exchange,
    txn,
    person,
    privateKeyJwt,
    spiffe,
  };
}

/** A client registered with its public ES256 key (jwks), whose assertions are signed here, each with a jti of its own. */
async function privateKeyJwtClient(box: Box): Promise<Seeded['privateKeyJwt']> {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const id = 'bench-private-key-jwt';
  const res = await box.json(
    'PUT',
    `/Client/${id}`,
    {
      grant_types: ['client_credentials'],
      jwks: { keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'bench' }] },
      auth: { client_credentials: { ...hour, token_format: 'jwt' } },
    },
    await box.rootToken(),
  );
  expectStatus(res, 201);
  const header = Buffer.from(JSON.stringify({ alg: 'ES256', kid: 'bench' })).toString('base64url');
  return {
    id,
    jwk: publicKey.export({ format: 'jwk' }),
    audience: box.url,
    assertion: () => {
      const now = Math.floor(Date.now() / 1000);
      const claims = { iss: id, sub: id, aud: box.url, jti: crypto.randomUUID(), iat: now, exp: now + 300 };
      const input = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
      return `${input}.${crypto.sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
    },
  };
}

/** Assertions a private_key_jwt row may send: more than it can send in its time at the best rate seen (BENCH_ASSERTIONS). */
export const ASSERTIONS = Number(process.env.BENCH_ASSERTIONS ?? 8000 * LOAD.seconds);

/** A token request as a client sends it: HTTP Basic and a form (bench-peers sends it to the peers' endpoints too). */
export const tokenRequest = (
  client: { id: string; secret: string },
  params: Record<string, string>,
  path = '/auth/token',
): BenchRequest => ({
  method: 'POST',
  path,
  headers: { Authorization: basic(client.id, client.secret), 'Content-Type': FORM },
  body: form(params),
});

const isJwt = (res: JsonResponse): void => {
  expectStatus(res, 200);
  if (String(res.body.access_token).split('.').length !== 3) throw new Error(`not a JWT: ${res.text}`);
};

/** The introspection row's requests: `client` asks about each of its `tokens`. */
export const introspectionRequests = (client: { id: string; secret: string }, tokens: string[]): BenchRequest[] =>
  tokens.map((t) => ({
    method: 'POST',
    path: '/auth/introspect',
    headers: { Authorization: basic(client.id, client.secret), 'Content-Type': FORM },
    body: form({ token: t }),
  }));

export function scenarios(s: Seeded): Scenario[] {
  const list: Scenario[] = [
    {
      key: 'cc_opaque',
      title: 'client_credentials, opaque',
      durable: 'token',
      goal: { of: 'token', min: 0.85 },
      requests: [tokenRequest(s.opaque, { grant_type: 'client_credentials' })],
      check: (res) => {
        expectStatus(res, 200);
        if (String(res.body.access_token).includes('.')) throw new Error('expected an opaque token');
      },
    },
    {
      key: 'cc_jwt',
      title: 'client_credentials, JWT ES256 + audience',
      durable: 'token',
      goal: { of: 'token', min: 0.85 },
      requests: [tokenRequest(s.jwt, { grant_type: 'client_credentials', audience: AUDIENCE })],
      check: isJwt,
    },
    {
      // Beside cc_jwt: the same token, the client proving itself with a fresh ES256 assertion (a new jti each, spent in the replay ledger).
      // Issue 65's goal: within 0.9 × cc_jwt; its durable ceiling does what it must beyond cc_jwt's (ceiling-durable.ts `assertion`).
      key: 'cc_private_key_jwt',
      title: 'client_credentials, JWT ES256, private_key_jwt (a fresh assertion each)',
      durable: 'assertion',
      goal: { of: 'cc_jwt', min: 0.9 },
      requests: [pkjwtRequest(s.privateKeyJwt)],
      fresh: () => Array.from({ length: ASSERTIONS }, () => pkjwtRequest(s.privateKeyJwt)),
      check: isJwt,
    },
    // Beside cc_jwt: the client a SPIFFE workload, proving itself with its JWT-SVID (draft-ietf-oauth-spiffe-client-auth-02):
    // the one SVID an agent hands out until it nears its exp (no jti: its signature is checked once), and a fresh SVID with a jti each (spent in the ledger).
    ...(s.spiffe
      ? ((spiffe): Scenario[] => [
          {
            key: 'cc_jwt_svid',
            title: 'client_credentials, JWT ES256, a JWT-SVID (jwt-spiffe)',
            durable: 'token',
            goal: { of: 'cc_jwt', min: 0.9 }, // issue 65
            requests: [svidRequest(spiffe.svid)],
            check: isJwt,
          },
          {
            key: 'cc_jwt_svid_jti',
            title: 'client_credentials, JWT ES256, a fresh JWT-SVID with a jti each',
            durable: 'token',
            requests: [svidRequest(spiffe.svidWithJti())],
            fresh: () => Array.from({ length: ASSERTIONS }, () => svidRequest(spiffe.svidWithJti())),
            check: isJwt,
          },
        ])(s.spiffe)
      : []),
    {
      key: 'refresh',
      title: 'refresh_token',
      durable: 'refresh',
      goal: { of: 'refresh', min: 0.8 },
      requests: s.refreshTokens.map((t) => tokenRequest(s.refreshClient, { grant_type: 'refresh_token', refresh_token: t })),
      check: (res) => {
        expectStatus(res, 200);
        if (!res.body.access_token) throw new Error(res.text);
      },
    },
    // A person's refresh, JWT access token, beside the same with three CEL claims (Client.claims): issue 53's goal is within 10 %.
    ...(['plain', 'claims'] as const).map((which): Scenario => ({
      key: which === 'plain' ? 'refresh_person' : 'refresh_claims',
      title: which === 'plain' ? "refresh_token, a person's, JWT" : "refresh_token, a person's, JWT + 3 CEL claims",
      durable: 'refresh',
      requests: s.person[which].refreshTokens.map((t) =>
        tokenRequest(s.person[which].client, { grant_type: 'refresh_token', refresh_token: t }),
      ),
      check: (res) => {
        isJwt(res);
        const claims = JSON.parse(Buffer.from(String(res.body.access_token).split('.')[1]!, 'base64url').toString()) as Record<
          string,
          unknown
        >;
        if (which === 'claims' && JSON.stringify(claims.roles) !== '["editors","admins"]') throw new Error(`no roles: ${res.text}`);
      },
    })),
    {
      key: 'exchange',
      title: 'token exchange (RFC 8693), delegation → JWT',
      durable: 'cc_jwt',
      goal: { of: 'cc_jwt', min: 0.9 },
      requests: s.opaqueTokens.map((t) =>
        tokenRequest(s.exchange.client, {
          grant_type: TOKEN_EXCHANGE,
          subject_token: t,
          subject_token_type: ACCESS_TOKEN_TYPE,
          actor_token: s.exchange.actorToken,
          actor_token_type: ACCESS_TOKEN_TYPE,
          audience: AUDIENCE,
        }),
      ),
      check: (res) => {
        isJwt(res);
        if (res.body.issued_token_type !== ACCESS_TOKEN_TYPE) throw new Error(res.text);
      },
    },
    {
      // Beside cc_jwt: a signed JWT and a session written, the subject token checked and the client's policy asked too.
      key: 'txn_token',
      title: 'Transaction Token (draft-ietf-oauth-transaction-tokens-10), token exchange',
      durable: 'cc_jwt',
      goal: { of: 'cc_jwt', min: 0.9 }, // issue 65
      requests: s.txn.subjectTokens.map((t) =>
        tokenRequest(s.txn.client, {
          grant_type: TOKEN_EXCHANGE,
          requested_token_type: TXN_TOKEN_TYPE,
          subject_token: t,
          subject_token_type: ACCESS_TOKEN_TYPE,
          scope: 'bench.txn',
          request_details: '{"action":"bench"}',
        }),
      ),
      check: (res) => {
        isJwt(res);
        if (res.body.issued_token_type !== TXN_TOKEN_TYPE) throw new Error(res.text);
      },
    },
    {
      key: 'introspection',
      title: 'introspection (opaque token)',
      goal: { of: 'bare', min: 0.7 },
      requests: introspectionRequests(s.opaque, s.opaqueTokens),
      check: (res) => {
        expectStatus(res, 200);
        if (res.body.active !== true) throw new Error(`inactive: ${res.text}`);
      },
    },
    {
      key: 'get_client',
      title: 'GET /Client/<id>, authorized',
      goal: { of: 'bare', min: 0.7 },
      requests: [{ method: 'GET', path: `/Client/${s.jwt.id}`, headers: { Authorization: `Bearer ${s.readerToken}` } }],
      check: (res) => {
        expectStatus(res, 200);
        if (res.body.id !== s.jwt.id) throw new Error(res.text);
      },
    },
    {
      key: 'post_users',
      title: 'POST /users (argon2id password)',
      latencyGoal: false,
      requests: [
        {
          method: 'POST',
          path: '/users',
          headers: { Authorization: `Bearer ${s.readerToken}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ email: 'bench-{n}@users.example', password: 'correct horse battery staple' }),
        },
      ],
      check: (res) => expectStatus(res, 201),
    },
  ];
  if (s.workloadAssertion) {
    list.push({
      key: 'workload',
      title: 'client_credentials, ServiceAccount token (JWT)',
      durable: 'token',
      requests: [
        {
          method: 'POST',
          path: '/auth/token',
          headers: { 'Content-Type': FORM },
          body: form({ grant_type: 'client_credentials', client_assertion_type: JWT_BEARER, client_assertion: s.workloadAssertion }),
        },
      ],
      check: isJwt,
    });
  }
  // Beside cc_jwt: the same token, a Hook asked about it answering after 5 ms or 50 ms (its second ratio: to cc_jwt).
  for (const { client, ms, around } of s.hooked ?? []) {
    list.push({
      key: `cc_jwt_hook_${ms}ms`,
      title: `client_credentials, JWT ES256 + audience, a hook of ${ms} ms`,
      durable: 'cc_jwt',
      // A hook's latency is the row's floor: p99 ≤ 25 ms is no goal past a 50 ms hook.
      ...(ms > 20 ? { latencyGoal: false as const } : {}),
      requests: [tokenRequest(client, { grant_type: 'client_credentials', audience: AUDIENCE })],
      check: hookedJwt,
      around,
    });
  }
  return list;
}

/** A client_credentials request authenticated by a fresh assertion of `client`. */
export function pkjwtRequest(client: Seeded['privateKeyJwt']): BenchRequest {
  return {
    method: 'POST',
    path: '/auth/token',
    headers: { 'Content-Type': FORM },
    body: form({ grant_type: 'client_credentials', client_assertion_type: JWT_BEARER, client_assertion: client.assertion() }),
  };
}

/** A client_credentials request authenticated by a JWT-SVID. */
function svidRequest(svid: string): BenchRequest {
  return {
    method: 'POST',
    path: '/auth/token',
    headers: { 'Content-Type': FORM },
    body: form({ grant_type: 'client_credentials', client_assertion_type: JWT_SPIFFE, client_assertion: svid }),
  };
}

/** The one request checked before a scenario's load, with `{n}` filled in. */
export function sample(box: Box, r: BenchRequest): Promise<JsonResponse> {
  return box.request(r.method, r.path, { headers: r.headers, ...(r.body ? { body: r.body.replace('{n}', `check-${Date.now()}`) } : {}) });
}
