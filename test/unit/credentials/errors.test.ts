// The one table of the OAuth error codes the box answers (api/credentials/errors.ts): every
// answer's status comes from it, and no code is answered that it does not list.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { OAUTH_ERRORS, OAuthError, resourceError, type OAuthErrorCode } from '../../../api/credentials/errors.js';

/** The codes of the box's own REST API and HTTP layer: not OAuth's, so not in the table. */
const BOX_CODES = [
  'not_found',
  'conflict',
  'method_not_allowed',
  'invalid_entity',
  'payload_too_large',
  'uri_too_long',
  'unsupported_media_type',
  'too_many_requests',
];

/** Every .ts file under `dir`. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
  );
}

/** The error codes the source writes where an answer is made: an OAuthError, a resource's refusal, a check's, an ApiError, a challenge. */
function codesAnswered(): Map<string, string> {
  const found = new Map<string, string>();
  const made = [
    /(?:OAuthError|resourceError|refuse)\(\s*'([a-z_]+)'/g,
    /(?:ApiError\(|super\()\s*\d+,\s*'([a-z_]+)'/g,
    /\berror: '([a-z_]+)'/g,
  ];
  for (const file of sources('api')) {
    const text = readFileSync(file, 'utf8');
    for (const pattern of made) for (const m of text.matchAll(pattern)) found.set(m[1]!, file);
  }
  return found;
}

describe('OAUTH_ERRORS: every OAuth error code the box answers', function () {
  it('lists each code the source answers with (the rest are the REST API’s own)', function () {
    const answered = codesAnswered();
    expect(answered.size).to.be.greaterThan(20);
    for (const [code, file] of answered) {
      expect(code in OAUTH_ERRORS || BOX_CODES.includes(code), `${code} (${file}) is not in OAUTH_ERRORS`).to.equal(true);
    }
  });

  it('gives each code a place, and a status wherever it answers with one', function () {
    for (const [code, answered] of Object.entries(OAUTH_ERRORS) as [OAuthErrorCode, Record<string, unknown>][]) {
      expect('endpoint' in answered || 'redirect' in answered || 'resource' in answered, code).to.equal(true);
      for (const place of ['endpoint', 'resource']) {
        if (place in answered) expect(answered[place], `${code} ${place}`).to.be.within(400, 599);
      }
    }
  });

  it('the endpoints answer with the status RFC 6749 §5.2 gives: 401 for invalid_client, 400 for the rest but a failure of the box', function () {
    expect(new OAuthError('invalid_client', 'x').status).to.equal(401);
    expect(new OAuthError('invalid_client', 'x', { basicAuthUsed: true }).headers).to.deep.equal({
      'WWW-Authenticate': 'Basic realm="boxauth"',
    });
    for (const code of [
      'invalid_request',
      'invalid_grant',
      'unauthorized_client',
      'invalid_scope',
      'slow_down',
      'use_dpop_nonce',
    ] as const) {
      expect(new OAuthError(code, 'x').status, code).to.equal(400);
    }
    expect(new OAuthError('server_error', 'x').status).to.equal(500);
    expect(new OAuthError('use_dpop_nonce', 'x', { dpopNonce: 'n' }).headers).to.deep.equal({ 'DPoP-Nonce': 'n' });
  });

  it('a resource answers 401 for a token or a sign-in it does not take, 403 for a token short of what it asks', function () {
    expect(resourceError('invalid_token', 'x').status).to.equal(401);
    expect(resourceError('invalid_dpop_proof', 'x').status).to.equal(401);
    expect(resourceError('use_dpop_nonce', 'x').status).to.equal(401);
    expect(resourceError('insufficient_user_authentication', 'x').status).to.equal(401);
    expect(resourceError('insufficient_scope', 'x').status).to.equal(403);
    expect(resourceError('access_denied', 'x', { 'WWW-Authenticate': 'Bearer' }).headers).to.deep.equal({ 'WWW-Authenticate': 'Bearer' });
  });
});
