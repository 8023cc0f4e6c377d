// A first-party OpenID client of the code flow with PKCE, as the tests of sign-ins use it to
// read what a sign-in proved: the ID token's amr and acr.
import { createHash, randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { decodeJwt } from 'jose';
import type { Box } from './box.js';

export interface CodeClient {
  /** The authorization request's path and query (a fresh nonce each time), with `extra` parameters (acr_values, max_age…). */
  authorizePath(extra?: Record<string, string>): string;
  /** The ID token's claims for a code the browser brought back. */
  claimsOf(code: string): Promise<Record<string, unknown>>;
}

/**
 * Registers client `id` (first party, redirecting to `callback`) with `root`'s token. `scope`
 * beyond openid (email, groups): their claims in the ID token too, as an app reads them there.
 */
export async function codeClient(box: Box, root: string, callback: string, id = 'rp', scope = 'openid'): Promise<CodeClient> {
  const secret = randomBytes(12).toString('hex');
  const client = {
    grant_types: ['authorization_code'],
    secret,
    first_party: true,
    ...(scope === 'openid' ? {} : { claims_in_id_token: true }),
    auth: { authorization_code: { redirect_uri: callback } },
  };
  expect((await box.json('PUT', `/Client/${id}`, client, root)).status).to.equal(201);
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  return {
    authorizePath: (extra = {}) =>
      `/auth/authorize?${new URLSearchParams({
        response_type: 'code',
        client_id: id,
        redirect_uri: callback,
        scope,
        nonce: randomBytes(8).toString('hex'),
        code_challenge: challenge,
        code_challenge_method: 'S256',
        ...extra,
      })}`,
    async claimsOf(code) {
      const res = await box.form(
        '/auth/token',
        { grant_type: 'authorization_code', code, redirect_uri: callback, code_verifier: verifier },
        { Authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}` },
      );
      expect(res.status, res.text).to.equal(200);
      return decodeJwt(res.body.id_token as string);
    },
  };
}
