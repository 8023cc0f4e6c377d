// Workload tokens as client authentication (RFC 7523): what an app sends, through
// openid-client or as a plain form; and a client's own key for private_key_jwt.
import crypto, { randomUUID } from 'node:crypto';
import * as oauth from 'openid-client';
import { JWT_BEARER } from '../../api/credentials/workload/assertion.js';
import type { Box, JsonResponse } from './box.js';

/** openid-client client authentication that sends a ready-made assertion (the pod's token). */
export function assertionAuth(assertion: () => string): oauth.ClientAuth {
  return (_as, _client, body) => {
    body.set('client_assertion_type', JWT_BEARER);
    body.set('client_assertion', assertion());
  };
}

/** A client_credentials request authenticated by a workload token, as a form. */
export function assertionRequest(box: Box, assertion: string, clientId?: string): Promise<JsonResponse> {
  return box.form('/auth/token', {
    grant_type: 'client_credentials',
    client_assertion_type: JWT_BEARER,
    client_assertion: assertion,
    ...(clientId ? { client_id: clientId } : {}),
  });
}

/** The claims of a JWT, unverified (to find a session by its jti). */
export function claimsOf(jwt: string): Record<string, any> {
  return JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString());
}

/** A client's own ES256 key (private_key_jwt): its public JWK Set, and fresh assertions it signs. */
export interface ClientKey {
  /** The Client's jwks: the public key, kid k1. */
  jwks: { keys: Record<string, unknown>[] };
  /** A fresh assertion of client `id` (iss and sub) for `audience` (the box's URL), with a jti of its own. */
  assertion(id: string, audience: string): string;
}

export function clientKey(): ClientKey {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return {
    jwks: { keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'k1' }] },
    assertion(id, audience) {
      const now = Math.floor(Date.now() / 1000);
      const header = Buffer.from(JSON.stringify({ alg: 'ES256', kid: 'k1' })).toString('base64url');
      const claims = { iss: id, sub: id, aud: audience, jti: randomUUID(), iat: now, exp: now + 60 };
      const input = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
      const signature = crypto.sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' });
      return `${input}.${signature.toString('base64url')}`;
    },
  };
}
