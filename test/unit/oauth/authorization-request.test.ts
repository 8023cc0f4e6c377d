// The reading of an authorization request, without a database or a browser: which problem
// wins when several apply, and whether it is shown on a page of the box or redirected to the
// client. The OpenID Foundation's conformance suite drives this endpoint: the order of the
// checks and every error code are part of what clients see, so these tests pin them.
import { expect } from 'chai';
import {
  AUTHORIZATION_REQUEST_CHECKS,
  parseAuthorizationRequest,
  redirectMatches,
  type AuthorizationRequestServices,
} from '../../../api/oauth/authorization-request.js';
import type { Stored } from '../../../api/store/resources.js';
import type { Client } from '../../../api/types.js';

const CB = 'https://app.example/cb';
const THUMBPRINT = 'A'.repeat(43);
const CHALLENGE = 'B'.repeat(43);

function client(change: Partial<Client> = {}, secretHash: string | null = 'hash'): Stored<Client> {
  return {
    resource: {
      resourceType: 'Client',
      id: 'app',
      grant_types: ['authorization_code', 'implicit'],
      auth: { authorization_code: { redirect_uri: CB }, implicit: { redirect_uri: CB } },
      scope: ['openid', 'email'],
      audience: ['https://api.example'],
      ...change,
    },
    managedBy: null,
    secretHash,
  };
}

function services(known: Stored<Client> | undefined): AuthorizationRequestServices {
  return {
    clients: { get: async () => known },
    config: { baseUrl: 'https://box.example' },
    apps: { byAudience: async () => undefined },
    keyring: { find: () => undefined },
    log: { info: () => undefined },
  } as unknown as AuthorizationRequestServices;
}

/** What the browser sees: a page, a redirect with an error, or a request read. */
async function outcome(
  raw: Record<string, unknown>,
  known: Stored<Client> | null = client(),
  pushed?: Parameters<typeof parseAuthorizationRequest>[2],
): Promise<string> {
  const r = await parseAuthorizationRequest(services(known ?? undefined), { client_id: 'app', ...raw }, pushed);
  if ('kind' in r) return r.kind === 'page' ? `page: ${r.message}` : `${r.error}: ${r.description}`;
  return 'read';
}

const UNKNOWN =
  'page: The application sent you here with a client or a redirect URI that this box does not know. ' +
  'Go back to the application; if it keeps happening, tell its developers.';

describe('AUTHORIZATION_REQUEST_CHECKS: every rule of the request, in the order its error wins', function () {
  it('the client and its redirect URI are checks of the list, first, and answered on a page; the rest in the redirect', function () {
    expect(AUTHORIZATION_REQUEST_CHECKS.onAPage.map((check) => check.name)).to.deep.equal([
      'eachParameterOnce',
      'clientIsNamed',
      'clientIsKnown',
      'requestObjectIsSigned',
      'redirectUriIsRegistered',
      'agentIsAdmitted',
    ]);
    expect(AUTHORIZATION_REQUEST_CHECKS.inTheRedirect.map((check) => check.name)).to.deep.equal([
      'requestObjectIsTaken',
      'responseTypeIsServed',
      'responseModeIsServed',
      'pushedWhenRequired',
      'signedWhenRequired',
      'fapi2Rules',
      'requestUriIsPushed',
      'oneRequestObject',
      'grantIsListed',
      'sectorIsVerified',
      'boundTokensComeFromCode',
      'dpopJktBindsACode',
      'challengeMethodIsS256',
      'challengeIsSha256',
      'publicClientUsesPkce',
      'scopeIsGranted',
      'resourceIsGranted',
      'idTokenIsOpenid',
      'promptIsServed',
      'maxAgeIsSeconds',
      'claimsAreReadable',
      'idTokenHintIsOurs',
    ]);
  });
});

describe('parseAuthorizationRequest: pages before the redirect URI is known good', function () {
  it('a parameter given twice, then a missing client_id, then an unknown client', async function () {
    expect(await outcome({ client_id: undefined, state: ['a', 'b'] })).to.equal('page: The parameter state was given more than once.');
    expect(await outcome({ client_id: undefined })).to.equal('page: The request names no client (client_id is missing).');
    expect(await outcome({ response_type: 'code' }, null)).to.equal(UNKNOWN);
  });

  it('a redirect URI not registered, missing among several, or different: the same page', async function () {
    expect(await outcome({ response_type: 'code' }, client({ auth: {} }))).to.equal(UNKNOWN);
    const several = client({ auth: { authorization_code: { redirect_uris: [CB, 'https://app.example/other'] } } });
    expect(await outcome({ response_type: 'code' }, several)).to.equal(UNKNOWN);
    expect(await outcome({ response_type: 'code', redirect_uri: 'https://evil.example/cb' })).to.equal(UNKNOWN);
    // An unsupported response_type is not redirected to a redirect URI that does not match either.
    expect(await outcome({ response_type: 'bogus', redirect_uri: 'https://evil.example/cb' })).to.equal(UNKNOWN);
    // ...nor, without a redirect_uri, to any of the registered ones (no grant names one).
    expect(await outcome({ response_type: 'bogus' })).to.equal(UNKNOWN);
  });

  it('with one redirect URI registered for the grant, it may be left out', async function () {
    expect(await outcome({ response_type: 'code', code_challenge: CHALLENGE })).to.equal('read');
    expect(await outcome({ response_type: 'code', redirect_uri: CB })).to.equal('read');
  });
});

describe('parseAuthorizationRequest: errors redirected to the client, in their order', function () {
  /** Fixes the problems of a request one at a time, and answers the error each step shows. */
  async function errorsInOrder(
    start: Record<string, unknown>,
    startClient: Partial<Client>,
    fixes: [Record<string, unknown>, Partial<Client>][],
    secretHash: string | null = 'hash',
  ): Promise<string[]> {
    const seen: string[] = [];
    let raw = { ...start };
    let settings = { ...startClient };
    for (const [rawFix, clientFix] of fixes) {
      seen.push(await outcome(raw, client(settings, secretHash)));
      raw = { ...raw, ...rawFix };
      settings = { ...settings, ...clientFix };
    }
    seen.push(await outcome(raw, client(settings, secretHash)));
    return seen;
  }

  it('the code flow', async function () {
    const seen = await errorsInOrder(
      {
        response_type: 'bogus',
        redirect_uri: CB,
        request: 'x.y.z',
        request_uri: 'urn:x',
        dpop_jkt: 'short',
        code_challenge_method: 'plain',
        code_challenge: 'short',
        scope: 'openid admin',
        resource: 'not-a-uri',
        prompt: 'bogus',
        max_age: 'soon',
        claims: '[',
        id_token_hint: 'x',
      },
      { require_pushed_authorization_requests: true, grant_types: ['implicit'] },
      [
        [{ response_type: 'code' }, {}],
        [{}, { require_pushed_authorization_requests: false }],
        [{ request: undefined, request_uri: undefined }, {}],
        [{}, { grant_types: ['authorization_code'] }],
        [{ dpop_jkt: THUMBPRINT }, {}],
        [{ code_challenge_method: 'S256' }, {}],
        [{ code_challenge: CHALLENGE }, {}],
        [{ scope: 'openid' }, {}],
        [{ resource: 'https://api.example' }, {}],
        [{ prompt: 'none login' }, {}],
        [{ prompt: 'none' }, {}],
        [{ max_age: '60' }, {}],
        [{ claims: '{"id_token":{"email":null}}' }, {}],
        [{ id_token_hint: undefined }, {}],
      ],
    );
    expect(seen).to.deep.equal([
      'unsupported_response_type: response_type must be one of: code, token, id_token, id_token token',
      'invalid_request: client "app" must push its authorization requests to /auth/par (RFC 9126)',
      'request_uri_not_supported: request_uri is not supported: send the parameters of the request themselves',
      'unauthorized_client: client "app" may not use the authorization_code grant (add authorization_code to its grant_types)',
      "invalid_request: dpop_jkt must be a key's JWK SHA-256 thumbprint (43 base64url characters)",
      'invalid_request: code_challenge_method must be S256',
      'invalid_request: code_challenge must be a base64url SHA-256 (43 characters)',
      'invalid_scope: client "app" may not be granted "admin" (see its scope list)',
      'invalid_target: resource must be an absolute URI, such as https://api.example.com (RFC 8707 §2)',
      'invalid_request: prompt "bogus" is not supported (none, login, consent, select_account)',
      'invalid_request: prompt=none cannot be combined with other values',
      'invalid_request: max_age must be a number of seconds',
      'invalid_request: claims must be a JSON object (OpenID Connect Core 5.5)',
      'invalid_request: id_token_hint is not an ID token this box issued',
      'read',
    ]);
  });

  it('the implicit kinds', async function () {
    const seen = await errorsInOrder(
      { response_type: 'id_token token', redirect_uri: CB, dpop_jkt: THUMBPRINT, code_challenge_method: 'plain', scope: 'email' },
      { grant_types: ['authorization_code'], dpop_bound_access_tokens: true },
      [
        [{}, { grant_types: ['implicit'] }],
        [{}, { dpop_bound_access_tokens: false }],
        [{ dpop_jkt: undefined }, {}],
        [{ scope: 'openid email' }, {}],
        [{ nonce: 'n' }, {}],
      ],
    );
    expect(seen).to.deep.equal([
      'unauthorized_client: client "app" may not use the implicit grant (add implicit to its grant_types)',
      'unauthorized_client: client "app" must bind its tokens with DPoP (dpop_bound_access_tokens): use the code flow',
      'invalid_request: dpop_jkt binds an authorization code; response_type=id_token token issues none',
      'invalid_request: response_type=id_token token needs scope openid',
      'invalid_request: response_type=id_token token needs a nonce (OpenID Connect Core §3.2.2.1)',
      'read',
    ]);
    // An ID token alone carries no access token: a DPoP-bound client may ask for one.
    const bound = client({ dpop_bound_access_tokens: true });
    expect(await outcome({ response_type: 'id_token', scope: 'openid', nonce: 'n' }, bound)).to.equal('read');
  });

  it('a client without a secret must use PKCE; scope is read before the client may be granted it', async function () {
    expect(await outcome({ response_type: 'code' }, client({}, null))).to.equal(
      'invalid_request: a client without a secret must use PKCE: send code_challenge and code_challenge_method=S256',
    );
    expect(await outcome({ response_type: 'code', scope: 'a"b' })).to.equal(
      'invalid_scope: scope must be scope tokens separated by single spaces, each of printable ASCII without " or \\',
    );
    expect(await outcome({ response_type: 'code', resource: 'https://other.example' })).to.equal(
      'invalid_target: client "app" may not ask for resource "https://other.example" (see its audience list)',
    );
  });

  it('a pushed request passes the PAR rule and may name its request_uri', async function () {
    const par = client({ require_pushed_authorization_requests: true });
    expect(await outcome({ response_type: 'code' }, par, 'being-pushed')).to.equal('read');
    // Being pushed, a request_uri is not one of the box's own.
    expect(await outcome({ response_type: 'code', request_uri: 'urn:x' }, par, 'being-pushed')).to.match(/^request_uri_not_supported/);
  });

  it('the error travels in the query for code, in the fragment otherwise, with the state, a describable description and the issuer (RFC 9207)', async function () {
    const code = await parseAuthorizationRequest(services(client({ grant_types: [] })), {
      client_id: 'app',
      response_type: 'code',
      state: 's t',
    });
    expect(code).to.include({ kind: 'redirect' });
    expect((code as { answer: { location: string } }).answer.location).to.equal(
      `${CB}?error=unauthorized_client&error_description=client+%27app%27+may+not+use+the+authorization_code+grant+%28add+authorization_code+to+its+grant_types%29&state=s+t&iss=https%3A%2F%2Fbox.example`,
    );
    const implicit = await parseAuthorizationRequest(services(client({ grant_types: [] })), {
      client_id: 'app',
      response_type: 'token',
      state: 's',
    });
    expect((implicit as { answer: { location: string } }).answer.location).to.equal(
      `${CB}#error=unauthorized_client&error_description=client+%27app%27+may+not+use+the+implicit+grant+%28add+implicit+to+its+grant_types%29&state=s&iss=https%3A%2F%2Fbox.example`,
    );
    // An unsupported response_type is answered as a code request would be: in the query.
    const bogus = await parseAuthorizationRequest(services(client()), { client_id: 'app', response_type: 'bogus', redirect_uri: CB });
    expect((bogus as { answer: { location: string } }).answer.location).to.match(
      /^https:\/\/app\.example\/cb\?error=unsupported_response_type/,
    );
  });

  it("response_mode: the error travels in the mode asked for; a mode refused, in the response type's default", async function () {
    const answer = async (raw: Record<string, string>, known = client({ grant_types: [] })) => {
      const r = await parseAuthorizationRequest(services(known), { client_id: 'app', state: 's', ...raw });
      return 'kind' in r && r.kind === 'redirect' ? { error: r.error, ...r.answer } : r;
    };
    // Asked for form_post: the refusal is posted, with the state and the issuer.
    expect(await answer({ response_type: 'code', response_mode: 'form_post' })).to.deep.include({
      via: 'form_post',
      action: CB,
      error: 'unauthorized_client',
    });
    expect(await answer({ response_type: 'token', response_mode: 'form_post' })).to.have.nested.property(
      'fields.iss',
      'https://box.example',
    );
    // A code in the fragment when asked; tokens never in the query (Multiple Response Types §3, §5).
    expect(await answer({ response_type: 'code', response_mode: 'fragment' }))
      .to.have.property('location')
      .that.match(/^https:\/\/app\.example\/cb#error=unauthorized_client/);
    for (const responseType of ['token', 'id_token', 'id_token token']) {
      const refused = await answer({ response_type: responseType, response_mode: 'query', scope: 'openid', nonce: 'n' }, client());
      expect(refused, responseType).to.include({ via: 'redirect', error: 'invalid_request' });
      expect((refused as { location: string }).location, responseType).to.match(
        /^https:\/\/app\.example\/cb#error=invalid_request&error_description=response_mode%3Dquery/,
      );
    }
    // A mode the box does not serve: refused, in the default mode.
    const unknown = await answer({ response_type: 'code', response_mode: 'jwt', code_challenge: CHALLENGE }, client());
    expect(unknown).to.include({ via: 'redirect', error: 'invalid_request' });
    expect((unknown as { location: string }).location).to.match(
      /^https:\/\/app\.example\/cb\?error=invalid_request&error_description=response_mode\+must\+be/,
    );
    // A page posts only to a web address: never a form whose action is another scheme.
    const native = client({ auth: { authorization_code: { redirect_uri: 'com.example.app:/cb' } } });
    expect(await answer({ response_type: 'code', response_mode: 'form_post', code_challenge: CHALLENGE }, native)).to.include({
      via: 'redirect',
      error: 'invalid_request',
    });
  });
});

describe('parseAuthorizationRequest: the request read', function () {
  it('carries what was asked, and of a pushed request only its client_id and request_uri', async function () {
    const asked = {
      client_id: 'app',
      response_type: 'code',
      code_challenge: CHALLENGE,
      scope: 'openid',
      resource: 'https://api.example',
      prompt: 'login consent',
      max_age: '0',
      login_hint: 'a@example.com',
      dpop_jkt: THUMBPRINT,
      nonce: 'n',
      state: 's',
      sign_in_after: '5',
    };
    const raw = { ...asked, request_uri: 'urn:ietf:params:oauth:request_uri:abc', unknown: 'dropped' };
    const pushed = { id: 'abc', browser: 'b' } as unknown as Parameters<typeof parseAuthorizationRequest>[2];
    const r = await parseAuthorizationRequest(services(client()), raw, pushed);
    expect(r).to.not.have.property('kind');
    const read = r as Exclude<typeof r, { kind: unknown }>;
    expect(read).to.deep.include({
      responseType: 'code',
      redirectUri: CB,
      state: 's',
      scope: 'openid',
      codeChallenge: CHALLENGE,
      nonce: 'n',
      claims: null,
      audience: 'https://api.example',
      dpopJkt: THUMBPRINT,
      maxAge: 0,
      loginHint: 'a@example.com',
      hintedUser: undefined,
      params: { client_id: 'app', request_uri: 'urn:ietf:params:oauth:request_uri:abc', sign_in_after: '5' },
      pushed,
    });
    expect([...read.prompt]).to.deep.equal(['login', 'consent']);
    const plain = await parseAuthorizationRequest(services(client()), { ...raw, request_uri: undefined });
    expect((plain as typeof read).params).to.deep.equal(asked);
  });
});

// Which redirect URIs an authorization request may name: the registered one to the letter, and for
// a native app's loopback listener (RFC 8252 §7.3) any port, but nothing else that differs, however it is spelled.
describe('redirectMatches: the redirect URIs a request may name', function () {
  it('the registered URI itself, and a loopback one on another port', function () {
    expect(redirectMatches('https://app.example/cb', 'https://app.example/cb')).to.equal(true);
    expect(redirectMatches('http://127.0.0.1:8000/cb', 'http://127.0.0.1:51234/cb')).to.equal(true);
    expect(redirectMatches('http://127.0.0.1/cb', 'http://127.0.0.1:51234/cb')).to.equal(true);
    expect(redirectMatches('http://[::1]:8000/cb?x=1', 'http://[::1]:9/cb?x=1')).to.equal(true);
  });

  it('no other port than a loopback one over http may change', function () {
    expect(redirectMatches('https://app.example/cb', 'https://app.example:444/cb')).to.equal(false);
    expect(redirectMatches('http://localhost:8000/cb', 'http://localhost:9/cb')).to.equal(false);
    expect(redirectMatches('https://127.0.0.1:8000/cb', 'https://127.0.0.1:9/cb')).to.equal(false);
    expect(redirectMatches('http://10.0.0.1:8000/cb', 'http://10.0.0.1:9/cb')).to.equal(false);
  });

  it('on a loopback URI, nothing else may differ: host, scheme, path, query, user info, fragment, or their spelling', function () {
    const registered = 'http://127.0.0.1:8000/cb';
    for (const requested of [
      'http://127.0.0.2:9/cb',
      'http://[::1]:9/cb',
      'https://127.0.0.1:9/cb',
      'http://127.0.0.1:9/cb/',
      'http://127.0.0.1:9/other',
      'http://127.0.0.1:9/cb?next=https://evil.example',
      'http://127.0.0.1:9/cb?',
      'http://127.0.0.1:9/cb#x',
      'http://evil.example@127.0.0.1:9/cb',
      'http://127.0.0.1:9/x/../cb',
      'http://127.0.0.1:9/%63b',
      'http://127.1:9/cb',
      'http://0x7f.0.0.1:9/cb',
      'HTTP://127.0.0.1:9/cb',
      'http://127.0.0.1.evil.example:9/cb',
      'http://127.0.0.1:9\\cb',
      'not a URL',
    ]) {
      expect(redirectMatches(registered, requested), requested).to.equal(false);
    }
  });
});
