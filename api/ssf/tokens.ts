// Security Event Tokens (RFC 8417) as SSF 1.0 §4 profiles them: `typ` secevent+jwt, signed RS256
// (the CAEP interoperability profile §2.6 asks for it, and every receiver takes it), one event per
// token (§4.1.3), the subject in `sub_id` (§4.1.2: "the sub claim MUST NOT be present"), and no
// `exp` (§4.1.7: "the exp claim MUST NOT be used"). A retry builds the token anew with the same
// `jti`, so a receiver can tell a SET it already has.
import type { Keyring } from '../credentials/keyring.js';
import { signJwt } from '../credentials/jwt.js';
import type { SubjectId } from './subjects.js';

export interface SecurityEvent {
  issuer: string;
  /** The stream's audience (its receiver). */
  audience: string;
  jti: string;
  subject: SubjectId;
  type: string;
  event: Record<string, unknown>;
  /** Seconds since the epoch; now, unless given. */
  issuedAt?: number;
}

export function securityEventToken(keyring: Pick<Keyring, 'activeFor'>, set: SecurityEvent): string {
  const claims = {
    iss: set.issuer,
    aud: set.audience,
    iat: set.issuedAt ?? Math.floor(Date.now() / 1000),
    jti: set.jti,
    sub_id: set.subject,
    events: { [set.type]: set.event },
  };
  return signJwt(keyring.activeFor('RS256'), claims, 'secevent+jwt');
}
