// A fuzz suite of our own: property-based requests (fast-check) at every
// endpoint a stranger or a client can reach, built from hostile pieces (NUL, lone
// surrogates, broken percent-encoding, prototype names, long strings, wrong
// content types and codings). Whatever comes in: no 5xx, errors as JSON
// {error, error_description} (pages for people as HTML, never a stack trace), a
// refused request writes nothing, and the process is healthy afterwards.
// Loopback only; each property is bounded in runs and in time.
import { expect } from 'chai';
import fc from 'fast-check';
import pg from 'pg';
import { stringify as toYaml } from 'yaml';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { Box, basic } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';

const RUNS = 300;
const TIME_LIMIT_MS = 20_000;
/** A failure prints its seed and path: FUZZ_SEED=<seed> FUZZ_PATH=<path> replays it (with --grep for its property). */
const PARAMETERS: fc.Parameters<unknown> = {
  numRuns: RUNS,
  interruptAfterTimeLimit: TIME_LIMIT_MS,
  ...(process.env.FUZZ_SEED ? { seed: Number(process.env.FUZZ_SEED), path: process.env.FUZZ_PATH } : {}),
};

const HOSTILE = [
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udfff',
  '%',
  '%ZZ',
  '%00',
  '%E0%A4%A',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'valueOf',
  'hasOwnProperty',
  '',
  ' ',
  '+',
  '&',
  '=',
  '..',
  '/',
  '\\',
  '"',
  "'",
  '<script>alert(1)</script>',
  '\uffff',
  '😀',
  'resource/id',
  'access_token',
  '${jndi:x}',
  '\r\n',
  'x'.repeat(5000),
  '-1',
  '0',
  '99999999999999999999',
  'null',
  '[]',
  '{}',
];
const hostile = fc.oneof(fc.constantFrom(...HOSTILE), fc.string({ unit: 'binary', maxLength: 30 }), fc.string({ maxLength: 30 }));
const PARAMS = [
  'grant_type',
  'client_id',
  'client_secret',
  'refresh_token',
  'code',
  'redirect_uri',
  'code_verifier',
  'audience',
  'scope',
  'token',
  'token_type_hint',
  'client_assertion',
  'client_assertion_type',
  'state',
  'response_type',
  'code_challenge',
  'code_challenge_method',
  'device_code',
  'user_code',
  'id_token_hint',
  'post_logout_redirect_uri',
];
const paramName = fc.oneof(fc.constantFrom(...PARAMS), hostile);
const grantType = fc.constantFrom(
  'client_credentials',
  'refresh_token',
  'authorization_code',
  'urn:ietf:params:oauth:grant-type:device_code',
  'password',
  'urn:x',
);

/** Header values fetch will send: visible ASCII only. */
const headerSafe = (s: string): string => s.replace(/[^\x20-\x7e]/g, '?');

function formBody(params: Record<string, unknown>): string {
  return Object.entries(params)
    .flatMap(([k, v]) => (Array.isArray(v) ? v : [v]).map((x) => `${encode(k)}=${encode(String(x))}`))
    .join('&');
}

/** Percent-encoding that survives lone surrogates (encodeURIComponent throws on them): those go raw. */
function encode(s: string): string {
  try {
    return encodeURIComponent(s);
  } catch {
    return s;
  }
}

/**
 * undefined when fetch would not send the request (a malformed URL or header: a
 * TypeError without a cause, or undici's invalid argument); any other error, such as
 * the box dropping the connection ("fetch failed" caused by UND_ERR_SOCKET), is a failure.
 */
function unsendable(err: unknown): undefined {
  const code = (err as { cause?: { code?: string } }).cause?.code;
  if (err instanceof TypeError && (code === undefined || code === 'UND_ERR_INVALID_ARG')) return undefined;
  throw err;
}

describe('fuzz: hostile requests at every endpoint', function () {
  this.timeout(120_000);
  let box: Box;
  let root: string;
  let db: pg.Client;

  before(async function () {
    box = await Box.start({ env: { BOXAUTH_CLIENT_AUTH_MAX_FAILURES: '1000' } });
    root = await box.rootToken();
    await box.addClient('app', { auth: { client_credentials: { refresh_token: true } } });
    await box.json(
      'PUT',
      '/Client/spa',
      { grant_types: ['authorization_code'], auth: { authorization_code: { redirect_uri: 'https://spa.example/cb' } } },
      root,
    );
    await box.json('POST', '/users', { email: 'ann@example.com', password: 'ann-password-1' }, root);
    await box.json('POST', '/groups', { name: 'staff' }, root);
    db = new pg.Client({ connectionString: box.databaseUrl });
    await db.connect();
  });
  after(async function () {
    await db?.end();
    await box?.stop();
  });

  /** What the box holds, as one string: equal before and after means nothing was written. */
  async function snapshot(): Promise<string> {
    const { rows } = await db.query(`SELECT
      (SELECT md5(coalesce(string_agg(id || resource::text || coalesce(secret_hash, ''), ',' ORDER BY id), '')) FROM clients) AS clients,
      (SELECT md5(coalesce(string_agg(id || resource::text, ',' ORDER BY id), '')) FROM access_policies) AS policies,
      (SELECT md5(coalesce(string_agg(id || email || password_hash || coalesce(data, '') || coalesce(status, '') || email_verified || must_enrol, ',' ORDER BY id), ''))
        FROM users) AS users,
      (SELECT md5(coalesce(string_agg(id || name || coalesce(description, '') || require_second_factor, ',' ORDER BY id), '')) FROM groups) AS groups,
      (SELECT md5(coalesce(string_agg(user_id || ':' || group_id, ',' ORDER BY user_id, group_id), '')) FROM user_groups) AS memberships,
      (SELECT count(*) || '/' || count(*) FILTER (WHERE active) FROM sessions) AS sessions,
      (SELECT count(*) FROM authorization_codes) AS codes,
      (SELECT count(*) || '/' || count(*) FILTER (WHERE decision IS NOT NULL) || '/' || count(used_at) FROM device_codes) AS device_codes,
      (SELECT count(*) FROM browser_sessions) AS browsers,
      (SELECT count(*) FROM consents) AS consents,
      (SELECT md5(coalesce(string_agg(id || coalesce(retired_at::text, ''), ',' ORDER BY id), '')) FROM signing_keys) AS signing_keys,
      (SELECT md5(coalesce(string_agg(name || '=' || value, ',' ORDER BY name), '')) FROM box_settings) AS settings`);
    return JSON.stringify(rows[0]);
  }

  /** The invariants of one answer. */
  function wellFormed(res: { status: number; headers: Headers; text: string; body: any }, what: string): void {
    expect(res.status, `${what} → ${res.status} ${res.text.slice(0, 300)}`).to.be.below(500);
    expect(res.text, what).not.to.match(/\bat \w[\w.]* \(|node_modules|\/dist\/api\//);
    if (res.status >= 400) {
      const type = res.headers.get('content-type') ?? '';
      if (type.startsWith('application/json') && res.status === 422) {
        expect(res.body.errors, `${what}: ${res.text.slice(0, 300)}`).to.be.an('object'); // {entity, errors}
      } else if (type.startsWith('application/json')) {
        expect(res.body.error, `${what}: ${res.text.slice(0, 300)}`).to.be.a('string');
        expect(res.body.error_description, what).to.be.a('string');
      } else {
        expect(type, `${what}: ${res.text.slice(0, 200)}`).to.match(/^text\/html/); // a page for a person
      }
    }
  }

  /** Runs `property`; a refused request must leave the box as it was. */
  async function check<T>(
    arb: fc.Arbitrary<T>,
    send: (input: T) => Promise<{ res: Awaited<ReturnType<Box['request']>>; what: string } | undefined>,
    mayWrite = false,
  ): Promise<void> {
    let before = await snapshot();
    await fc.assert(
      fc.asyncProperty(arb, async (input) => {
        const sent = await send(input);
        if (!sent) return; // the input cannot be put on the wire (fetch refuses it): nothing to see
        wellFormed(sent.res, sent.what);
        const after = await snapshot();
        if (sent.res.status >= 300 || !mayWrite) expect(after, `${sent.what} → ${sent.res.status} changed the box`).to.equal(before);
        before = after;
      }),
      PARAMETERS,
    );
  }

  async function send(method: string, path: string, init: { headers?: Record<string, string>; body?: Buffer | string } = {}) {
    return box.request(method, path, init as { headers?: Record<string, string>; body?: string }).catch(unsendable);
  }

  it('the token endpoint', async function () {
    const sessionsBefore = (await db.query('SELECT count(*)::int AS n FROM sessions')).rows[0].n as number;
    let issued = 0;
    const request = fc.record({
      grant: grantType,
      params: fc.dictionary(paramName, fc.oneof(hostile, fc.array(hostile, { maxLength: 2 })), { maxKeys: 6 }),
      format: fc.constantFrom('form', 'json', 'raw'),
      raw: hostile,
      contentType: fc.constantFrom(
        'application/x-www-form-urlencoded',
        'application/json',
        'text/plain',
        'application/json; charset=latin1',
        '',
        'application/x-www-form-urlencoded; charset=utf-8',
      ),
      encoding: fc.constantFrom('', '', 'gzip', 'deflate', 'br', 'bogus', 'gzip-lie'),
      auth: fc.oneof(
        fc.constant(''),
        fc.constant(basic('app', 'wrong-secret')),
        hostile.map((s) => `Basic ${Buffer.from(s).toString('base64')}`),
        hostile.map((s) => `Basic ${Buffer.from(`app:${encode(s)}`).toString('base64')}`),
        hostile.map((s) => `Basic ${headerSafe(s)}`),
        fc.constant(basic('root', box.rootSecret)),
      ),
    });
    // Counting sessions written by answers of 200 (valid requests do happen: root's credentials are among the inputs).
    let before = await snapshot();
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const params = { grant_type: r.grant, ...r.params };
        let body: Buffer = Buffer.from(r.format === 'json' ? JSON.stringify(params) : r.format === 'form' ? formBody(params) : r.raw);
        const headers: Record<string, string> = {};
        if (r.contentType) headers['Content-Type'] = r.contentType;
        if (r.auth) headers.Authorization = r.auth;
        if (r.encoding) {
          headers['Content-Encoding'] = r.encoding === 'gzip-lie' ? 'gzip' : r.encoding;
          if (r.encoding === 'gzip') body = gzipSync(body);
          if (r.encoding === 'deflate') body = deflateSync(body);
          if (r.encoding === 'br') body = brotliCompressSync(body);
        }
        const res = await send('POST', '/auth/token', { headers, body });
        if (!res) return;
        wellFormed(res, `POST /auth/token ${JSON.stringify(r).slice(0, 300)}`);
        const after = await snapshot();
        if (res.status === 200) issued++;
        else expect(after, `a refused token request changed the box: ${JSON.stringify(r).slice(0, 300)}`).to.equal(before);
        before = after;
      }),
      PARAMETERS,
    );
    const sessionsAfter = (await db.query('SELECT count(*)::int AS n FROM sessions')).rows[0].n as number;
    expect(sessionsAfter - sessionsBefore).to.equal(issued);
  });

  it('introspection and revocation', async function () {
    await check(
      fc.record({ path: fc.constantFrom('/auth/introspect', '/auth/revoke'), params: fc.dictionary(paramName, hostile, { maxKeys: 4 }) }),
      async ({ path, params }) => {
        const res = await send('POST', path, {
          headers: { Authorization: basic('root', box.rootSecret), 'Content-Type': 'application/x-www-form-urlencoded' },
          body: formBody(params),
        });
        return res && { res, what: `POST ${path} ${JSON.stringify(params).slice(0, 300)}` };
      },
    );
  });

  it('the authorize endpoint, with and without a signed-in browser', async function () {
    const browser = new FormAgent(box);
    expect((await browser.signIn('ann@example.com', 'ann-password-1')).status).to.equal(303);
    await check(
      fc.record({ query: fc.dictionary(paramName, hostile, { maxKeys: 6 }), signedIn: fc.boolean(), raw: fc.option(hostile) }),
      async ({ query, signedIn, raw }) => {
        const path = `/auth/authorize?${raw ?? formBody({ client_id: 'spa', ...query })}`;
        const res = signedIn ? await browser.get(path).catch(unsendable) : await send('GET', path);
        return res && { res, what: `GET ${path.slice(0, 300)}` };
      },
    );
  });

  it('sign-in, sign-up and consent forms', async function () {
    const agent = new FormAgent(box);
    const page = await agent.get('/auth/sign-in');
    const csrf = hiddenFields(page.text).csrf!;
    await check(
      fc.record({
        path: fc.constantFrom('/auth/sign-in', '/auth/sign-up', '/auth/consent', '/auth/sign-out'),
        fields: fc.dictionary(
          fc.oneof(fc.constantFrom('email', 'password', 'csrf', 'return_to', 'decision', 'client_id'), hostile),
          hostile,
          { maxKeys: 5 },
        ),
        withCsrf: fc.boolean(),
      }),
      async ({ path, fields, withCsrf }) => {
        const res = await agent.post(path, { ...(withCsrf ? { csrf } : {}), ...fields }).catch(unsendable);
        return res && { res, what: `POST ${path} ${JSON.stringify(fields).slice(0, 300)}` };
      },
    );
  });

  it('the device and OpenID Connect endpoints', async function () {
    const browser = new FormAgent(box);
    expect((await browser.signIn('ann@example.com', 'ann-password-1')).status).to.equal(303);
    const csrf = hiddenFields((await browser.get('/auth/device/verify')).text).csrf!;
    await check(
      fc.record({
        endpoint: fc.constantFrom(
          'POST /auth/device',
          'GET /auth/device/verify',
          'POST /auth/device/verify',
          'GET /auth/userinfo',
          'POST /auth/userinfo',
          'GET /auth/logout',
          'POST /auth/logout',
        ),
        params: fc.dictionary(paramName, hostile, { maxKeys: 5 }),
        auth: fc.oneof(
          fc.constant(''),
          fc.constant(basic('root', box.rootSecret)),
          hostile.map((s) => `Bearer ${headerSafe(s)}`),
        ),
        withCsrf: fc.boolean(),
      }),
      async ({ endpoint, params, auth, withCsrf }) => {
        const [method, path] = endpoint.split(' ') as [string, string];
        const what = `${endpoint} ${JSON.stringify(params).slice(0, 300)}`;
        if (path === '/auth/device/verify') {
          // the page of a signed-in person, who types the user code
          const res =
            method === 'GET'
              ? await browser.get(`${path}?${formBody(params)}`).catch(unsendable)
              : await browser.post(path, { ...(withCsrf ? { csrf } : {}), ...params }).catch(unsendable);
          return res && { res, what };
        }
        const res = await send(method, method === 'GET' ? `${path}?${formBody(params)}` : path, {
          headers: {
            ...(auth ? { Authorization: auth } : {}),
            ...(method === 'POST' ? { 'Content-Type': 'application/x-www-form-urlencoded' } : {}),
          },
          ...(method === 'POST' ? { body: formBody(params) } : {}),
        });
        return res && { res, what };
      },
      true, // a device authorization that is granted writes its device code
    );
  });

  it('the resource API, users and groups, in JSON and YAML', async function () {
    const key = fc.oneof(
      fc.constantFrom(
        'id',
        'grant_types',
        'secret',
        'engine',
        'link',
        'email',
        'password',
        'data',
        'group-ids',
        'name',
        'description',
        'active',
        'exp',
        'resourceType',
        'auth',
        'audience',
        'scope',
        'matcho',
        'schema',
      ),
      hostile,
    );
    const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
      v: fc.oneof(
        { depthSize: 'small' },
        hostile,
        fc.integer(),
        fc.boolean(),
        fc.constant(null),
        fc.array(tie('v'), { maxLength: 3 }),
        fc.dictionary(key, tie('v'), { maxKeys: 4 }),
      ),
    })).v;
    await check(
      fc.record({
        method: fc.constantFrom('GET', 'PUT', 'POST', 'DELETE'),
        type: fc.constantFrom('Client', 'AccessPolicy', 'Session', 'users', 'groups', 'client', 'Users'),
        id: fc.option(fc.oneof(hostile, fc.constantFrom('1', '2', 'app', 'spa', 'root'))),
        query: fc.dictionary(
          fc.oneof(fc.constantFrom('_count', '_page', '_sort', 'email', 'q', 'name', 'client', 'active', 'id'), hostile),
          hostile,
          { maxKeys: 3 },
        ),
        body: fc.dictionary(key, value, { maxKeys: 6 }),
        protoKey: fc.option(fc.constantFrom('__proto__', 'constructor')),
        yaml: fc.boolean(),
        trailing: fc.constantFrom('', '/', '//'),
      }),
      async (r) => {
        const rawId = r.id === null ? '' : `/${encode(r.id)}`;
        const path = `/${r.type}${rawId}${r.trailing}${Object.keys(r.query).length ? `?${formBody(r.query)}` : ''}`;
        let body: string | undefined;
        if (r.method === 'PUT' || r.method === 'POST') {
          body = r.yaml ? toYaml(r.body) : JSON.stringify(r.body);
          // A key JSON.stringify cannot produce from an object literal: written into the text.
          if (r.protoKey)
            body = r.yaml
              ? `${r.protoKey}: {polluted: true}\n${body}`
              : `{"${r.protoKey}": {"polluted": true}, ${body.slice(1)}`.replace(', }', '}');
        }
        const res = await send(r.method, path, {
          headers: {
            Authorization: `Bearer ${root}`,
            ...(body !== undefined ? { 'Content-Type': r.yaml ? 'application/yaml' : 'application/json' } : {}),
          },
          ...(body !== undefined ? { body } : {}),
        });
        return res && { res, what: `${r.method} ${path.slice(0, 200)} ${(body ?? '').slice(0, 300)}` };
      },
      true,
    );
  });

  it('is healthy afterwards, and still issues tokens and answers the API', async function () {
    expect(box.process!.exitCode).to.equal(null);
    expect((await box.request('GET', '/healthz')).status).to.equal(200);
    expect((await box.request('GET', '/readyz')).status).to.equal(200);
    const token = await box.rootToken();
    expect((await box.json('GET', '/Client/root', undefined, token)).status).to.equal(200);
    expect(
      box.logs.filter((l) => l.includes('"level":"error"')),
      'errors in the log',
    ).to.deep.equal([]);
  });
});
