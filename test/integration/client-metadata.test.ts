// Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document; docs/guides/agents.md):
// an agent names itself by the HTTPS URL of its document, which the box fetches, checks, stores as
// a client and admits by an AccessPolicy, at each authorization request. The vendor's server is
// the test's own (test/support/client-documents.ts), over HTTPS with the test's CA given to the
// box through NODE_EXTRA_CA_CERTS. The attacks: a document at loopback on a box that does not
// allow it (SSRF), one that redirects, a huge one, a slow one, a client_id that is not its URL, a
// document asking for a client secret, a box without a policy, a document changing its
// redirect_uris while cached, a client_id that is not https.
import { expect } from 'chai';
import { createHash, randomBytes } from 'node:crypto';
import { Box, eventually, sleep } from '../support/box.js';
import { clientDocuments, type ClientDocuments } from '../support/client-documents.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { testCa, type TestCa } from '../support/tls.js';

const PASSWORD = 'a-good-password-1';
const verifier = randomBytes(32).toString('base64url');
const challenge = createHash('sha256').update(verifier).digest('base64url');

/** A native agent's way back: a loopback address, on whatever port it listens (RFC 8252 §7.3). */
const REGISTERED = 'http://127.0.0.1/callback';
const LISTENING = 'http://127.0.0.1:49152/callback';

const authorizePath = (clientId: string, redirectUri = LISTENING, extra: Record<string, string> = {}): string =>
  `/auth/authorize?${new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    scope: 'openid',
    state: 'st',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...extra,
  })}`;

const document = (clientId: string, more: Record<string, unknown> = {}): Record<string, unknown> => ({
  client_id: clientId,
  client_name: 'Research Agent',
  redirect_uris: [REGISTERED],
  token_endpoint_auth_method: 'none',
  grant_types: ['authorization_code', 'refresh_token'],
  ...more,
});

/** The box's log says why it refused (its lines arrive a moment after the answer). */
const logged = (box: Box, why: RegExp): Promise<true> =>
  eventually(`a log line matching ${why}`, () => Promise.resolve(why.test(box.logs.join('\n'))), 5000);

const consentAsked = (res: { status: number; text: string }): boolean => res.status === 200 && res.text.includes('action="/auth/consent"');

describe('Client ID Metadata Documents', function () {
  this.timeout(120_000);
  let ca: TestCa;
  let docs: ClientDocuments;
  /** A box for development: it may fetch from loopback (BOXAUTH_CLIENT_METADATA_ALLOWED_ADDRESSES). */
  let box: Box;
  /** A box as in production: it may not. */
  let strict: Box;
  let root: string;
  let agentUrl: string;
  let browser: FormAgent;

  before(async function () {
    ca = testCa();
    docs = await clientDocuments(ca);
    const env = {
      NODE_EXTRA_CA_CERTS: ca.caFile,
      BOXAUTH_CLIENT_METADATA_TIMEOUT_MS: '1000',
      BOXAUTH_CLIENT_METADATA_MIN_CACHE_SECONDS: '0',
    };
    [box, strict] = await Promise.all([
      Box.start({ env: { ...env, BOXAUTH_CLIENT_METADATA_ALLOWED_ADDRESSES: '127.0.0.1/32, ::1/128' } }),
      Box.start({ env }),
    ]);
    root = await box.rootToken();
    agentUrl = `${docs.origin}/agent.json`;
    docs.serve('/agent.json', { body: document(agentUrl), headers: { 'Cache-Control': 'max-age=300' } });
    const email = `person-${randomBytes(3).toString('hex')}@example.com`;
    expect((await box.json('POST', '/users', { email, password: PASSWORD }, root)).status).to.equal(201);
    browser = new FormAgent(box);
    expect((await browser.signIn(email, PASSWORD)).status).to.equal(303);
  });

  after(async function () {
    await Promise.all([box?.stop(), strict?.stop(), docs?.close()]);
  });

  /** Admits the agents whose client_id is on the vendor's server (docs/examples/policies/agent-vendor.yaml, its CEL). */
  async function admitVendor(): Promise<void> {
    const policy = {
      engine: 'cel',
      description: 'the agents of one vendor, by the host of their metadata document',
      cel: `request.registration.kind == "metadata-document" && request.registration.host == "${new URL(docs.origin).host}"`,
    };
    const res = await box.json('PUT', '/AccessPolicy/agent-vendor', policy, root);
    expect(res.status, res.text).to.be.oneOf([200, 201]);
  }

  it('says so in the metadata', async function () {
    const res = await box.json('GET', '/.well-known/oauth-authorization-server');
    expect(res.body.client_id_metadata_document_supported).to.equal(true);
    expect(res.body).not.to.have.property('registration_endpoint');
  });

  it('a box with no policy admits no agent; a policy written admits it at the next request, and one removed refuses it at once', async function () {
    const refused = await browser.get(authorizePath(agentUrl));
    expect(refused.status, refused.text).to.equal(403);
    expect(refused.text).to.include('not admitted');
    expect(refused.headers.get('location')).to.equal(null);
    const pushed = await box.form('/auth/par', {
      response_type: 'code',
      client_id: agentUrl,
      redirect_uri: LISTENING,
      code_challenge: challenge,
      code_challenge_method: 'S256',
    });
    expect(pushed.status, pushed.text).to.equal(400);
    expect(pushed.body.error).to.equal('unauthorized_client');
    await admitVendor();
    expect(consentAsked(await browser.get(authorizePath(agentUrl)))).to.equal(true);
    expect((await box.json('DELETE', '/AccessPolicy/agent-vendor', undefined, root)).status).to.be.oneOf([200, 204]);
    expect((await browser.get(authorizePath(agentUrl))).status).to.equal(403);
    await admitVendor();
  });

  it('an admitted agent: consent names it, PKCE and a loopback redirect on any port, tokens for its URL, marked as an agent where grants are listed, ended from the account page', async function () {
    await admitVendor();
    const page = await browser.get(authorizePath(agentUrl));
    expect(consentAsked(page), page.text).to.equal(true);
    expect(page.text).to.match(/<p id="agent">[^<]*<strong><bdi>Research Agent<\/bdi><\/strong>/);
    expect(page.text).to.include(`<code><bdi>${agentUrl}</bdi></code>`);
    expect(page.text).to.include('name="decision" value="allow"');
    const allowed = await browser.consent(page, 'allow');
    expect(allowed.status, allowed.text).to.equal(302);
    const back = new URL(allowed.headers.get('location')!);
    expect(`${back.origin}${back.pathname}`).to.equal(LISTENING);
    const tokens = await box.form('/auth/token', {
      grant_type: 'authorization_code',
      code: back.searchParams.get('code')!,
      redirect_uri: LISTENING,
      client_id: agentUrl,
      code_verifier: verifier,
    });
    expect(tokens.status, tokens.text).to.equal(200);
    expect(tokens.body.refresh_token).to.be.a('string');

    // The account page and the admin console's Sessions view (GET /grants) mark the grant as an agent's.
    const account = await browser.get('/auth/account');
    expect(account.text).to.match(
      /<tr class="agent"><td><span class="tag">agent<\/span> <bdi>Research Agent<\/bdi> <code><bdi>https:\/\/127\.0\.0\.1:\d+\/agent\.json<\/bdi><\/code>/,
    );
    const grants = await box.json('GET', `/grants?client=${encodeURIComponent(agentUrl)}`, undefined, root);
    expect(grants.status, grants.text).to.equal(200);
    expect(grants.body[0].agent).to.deep.equal({ kind: 'metadata-document', client_name: 'Research Agent' });

    // Ending it there ends its tokens: the refresh token is refused.
    const grantId = grants.body[0].id as string;
    const ended = await browser.post('/auth/account/grants/end', { csrf: hiddenFields(account.text).csrf!, grant: grantId });
    expect(ended.status, ended.text).to.equal(303);
    const refreshed = await box.form('/auth/token', {
      grant_type: 'refresh_token',
      refresh_token: tokens.body.refresh_token,
      client_id: agentUrl,
    });
    expect(refreshed.status, refreshed.text).to.equal(400);
  });

  it('a policy removed stops an admitted agent at its next refresh, not only at its next authorization request; put back, it refreshes again', async function () {
    await admitVendor();
    let answer = await browser.get(authorizePath(agentUrl));
    if (consentAsked(answer)) answer = await browser.consent(answer, 'allow');
    expect(answer.status, answer.text).to.equal(302);
    const tokens = await box.form('/auth/token', {
      grant_type: 'authorization_code',
      code: new URL(answer.headers.get('location')!).searchParams.get('code')!,
      redirect_uri: LISTENING,
      client_id: agentUrl,
      code_verifier: verifier,
    });
    expect(tokens.status, tokens.text).to.equal(200);
    const refresh = (token: string) => box.form('/auth/token', { grant_type: 'refresh_token', refresh_token: token, client_id: agentUrl });
    const first = await refresh(tokens.body.refresh_token);
    expect(first.status, first.text).to.equal(200);

    expect((await box.json('DELETE', '/AccessPolicy/agent-vendor', undefined, root)).status).to.be.oneOf([200, 204]);
    const refused = await refresh(first.body.refresh_token);
    expect(refused.status, `a refresh after the admitting policy was removed: ${refused.text}`).to.equal(400);
    expect(refused.body.error).to.equal('invalid_grant');
    expect(refused.body.error_description).to.match(/AccessPolicy/);

    // Refused, not closed: the same refresh token works once a policy admits the agent again.
    await admitVendor();
    const again = await refresh(first.body.refresh_token);
    expect(again.status, again.text).to.equal(200);
  });

  it('a pushed request (RFC 9126) of an agent fetches its document first, and is admitted by the same policy', async function () {
    await admitVendor();
    const pushed = await box.form('/auth/par', {
      response_type: 'code',
      client_id: agentUrl,
      redirect_uri: LISTENING,
      code_challenge: challenge,
      code_challenge_method: 'S256',
    });
    expect(pushed.status, pushed.text).to.equal(201);
  });

  it('refuses a redirect URI the document does not list, and a request without PKCE', async function () {
    await admitVendor();
    expect((await browser.get(authorizePath(agentUrl, 'https://evil.example/cb'))).status).to.equal(400);
    const noPkce = await browser.get(
      `/auth/authorize?${new URLSearchParams({ response_type: 'code', client_id: agentUrl, redirect_uri: LISTENING })}`,
    );
    expect(noPkce.status).to.equal(302);
    expect(new URL(noPkce.headers.get('location')!).searchParams.get('error')).to.equal('invalid_request');
  });

  it('SSRF: a box not allowed loopback never fetches a document there, nor from itself', async function () {
    await strict.json(
      'PUT',
      '/AccessPolicy/any-agent',
      { engine: 'cel', cel: 'request.registration.kind == "metadata-document"' },
      await strict.rootToken(),
    );
    docs.serve('/loopback.json', { body: document(`${docs.origin}/loopback.json`) });
    const res = await new FormAgent(strict).get(authorizePath(`${docs.origin}/loopback.json`));
    expect(res.status).to.equal(400);
    expect(docs.hits('/loopback.json')).to.equal(0);
    // By name: localhost is 127.0.0.1 once resolved, and that is what is checked.
    const byName = await new FormAgent(strict).get(authorizePath(`https://localhost:${new URL(docs.origin).port}/loopback.json`));
    expect(byName.status).to.equal(400);
    expect(docs.hits('/loopback.json')).to.equal(0);
    // The box itself, by its own name and port, even where loopback is allowed.
    const itself = await browser.get(authorizePath(`https://127.0.0.1:${box.port}/.well-known/oauth-authorization-server`));
    expect(itself.status).to.equal(400);
    await logged(strict, /special-use|the box's own address/);
    await logged(box, /the box itself/);
  });

  it('a document that redirects is not followed', async function () {
    await admitVendor();
    docs.serve('/moved.json', { status: 302, headers: { Location: `${docs.origin}/agent.json` } });
    const before = docs.hits('/agent.json');
    const res = await browser.get(authorizePath(`${docs.origin}/moved.json`));
    expect(res.status).to.equal(400);
    expect(docs.hits('/moved.json')).to.equal(1);
    expect(docs.hits('/agent.json')).to.equal(before);
  });

  it('a huge document is cut off at 5 KiB, with a Content-Length or streamed without one', async function () {
    await admitVendor();
    const url = `${docs.origin}/huge.json`;
    docs.serve('/huge.json', { body: document(url, { padding: 'x'.repeat(6 * 1024) }) });
    expect((await browser.get(authorizePath(url))).status).to.equal(400);
    docs.serve('/streamed.json', { streamBytes: 1024 * 1024 });
    expect((await browser.get(authorizePath(`${docs.origin}/streamed.json`))).status).to.equal(400);
    await logged(box, /larger than 5120 bytes/);
  });

  it('a slow document is given up after the time limit', async function () {
    await admitVendor();
    const url = `${docs.origin}/slow.json`;
    docs.serve('/slow.json', { body: document(url), delayMs: 5000 });
    const started = Date.now();
    const res = await browser.get(authorizePath(url));
    expect(res.status).to.equal(400);
    expect(Date.now() - started).to.be.below(3000);
  });

  it('a document whose client_id is not its own URL is refused', async function () {
    await admitVendor();
    docs.serve('/impostor.json', { body: document(agentUrl) });
    expect((await browser.get(authorizePath(`${docs.origin}/impostor.json`))).status).to.equal(400);
    await logged(box, /names another client_id than its URL/);
  });

  it('a document asking for a client secret (client_secret_basic) is refused', async function () {
    await admitVendor();
    const url = `${docs.origin}/secretive.json`;
    docs.serve('/secretive.json', { body: document(url, { token_endpoint_auth_method: 'client_secret_basic' }) });
    expect((await browser.get(authorizePath(url))).status).to.equal(400);
    await logged(box, /token_endpoint_auth_method must be/);
  });

  it('a document whose client_name holds a bidi control (U+202E) is refused: the consent page would draw it mirrored', async function () {
    await admitVendor();
    const url = `${docs.origin}/mirrored.json`;
    docs.serve('/mirrored.json', { body: document(url, { client_name: 'Research Agent\u202E (trusted)' }) });
    expect((await browser.get(authorizePath(url))).status).to.equal(400);
    await logged(box, /client_name holds a control or invisible character \(U\+202E\)/);
  });

  it('a client_id that is not an https URL is not fetched', async function () {
    await admitVendor();
    const url = `${docs.plainOrigin}/plain.json`;
    docs.serve('/plain.json', { body: document(url) });
    expect((await browser.get(authorizePath(url))).status).to.equal(400);
    expect(docs.hits('/plain.json')).to.equal(0);
    // Nor a URL the draft's §3 refuses: a fragment, dot segments, user information.
    for (const bad of [
      `${docs.origin}/agent.json#x`,
      `${docs.origin}/a/../agent.json`,
      `https://user@127.0.0.1:${new URL(docs.origin).port}/agent.json`,
    ]) {
      expect((await browser.get(authorizePath(bad))).status, bad).to.equal(400);
    }
  });

  it('a document that changes its redirect_uris: the cached one stands for its max-age, then the new one replaces it', async function () {
    await admitVendor();
    const url = `${docs.origin}/changing.json`;
    const elsewhere = 'https://agent.example/callback';
    docs.serve('/changing.json', { body: document(url), headers: { 'Cache-Control': 'max-age=2' } });
    expect(consentAsked(await browser.get(authorizePath(url)))).to.equal(true);
    docs.serve('/changing.json', { body: document(url, { redirect_uris: [elsewhere] }), headers: { 'Cache-Control': 'max-age=2' } });
    // Cached: the new address is not the client's yet, the old one still is.
    expect((await browser.get(authorizePath(url, elsewhere))).status).to.equal(400);
    expect(consentAsked(await browser.get(authorizePath(url)))).to.equal(true);
    expect(docs.hits('/changing.json')).to.equal(1);
    await sleep(2200);
    // Expired: fetched again, the old address is no longer the client's.
    expect(consentAsked(await browser.get(authorizePath(url, elsewhere)))).to.equal(true);
    expect((await browser.get(authorizePath(url))).status).to.equal(400);
    expect(docs.hits('/changing.json')).to.equal(2);
  });

  it("an administrator reads and removes an agent's client by its URL", async function () {
    await admitVendor();
    // Consented to before: a code at once.
    expect((await browser.get(authorizePath(agentUrl))).status).to.equal(302);
    const read = await box.json('GET', `/Client/${encodeURIComponent(agentUrl)}`, undefined, root);
    expect(read.status, read.text).to.equal(200);
    expect(read.body.registration).to.include({ kind: 'metadata-document', client_name: 'Research Agent' });
    const removed = await box.json('DELETE', `/Client/${encodeURIComponent(agentUrl)}`, undefined, root);
    expect(removed.status, removed.text).to.equal(200);
  });

  it('a Client written through the API cannot pass for an agent', async function () {
    const res = await box.json(
      'PUT',
      '/Client/pretender',
      {
        grant_types: ['authorization_code'],
        auth: { authorization_code: { redirect_uri: REGISTERED } },
        registration: { kind: 'metadata-document', client_name: 'Research Agent' },
      },
      root,
    );
    expect(res.status, res.text).to.equal(422);
    expect(res.body.errors.registration[0]).to.include('written by the box only');
  });
});
