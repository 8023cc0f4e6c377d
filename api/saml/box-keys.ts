// The box's keys as SAML names them. SAML signs with the box's RS256 keys (api/credentials/keyring.ts),
// which rotate as the JWKS does, and knows a key only by a certificate: each key is put in a
// self-signed one (./certificate.ts), which vouches for nothing but the key. Both sides of the box
// publish them the same way — the IdP metadata apps read (./idp-metadata.ts) and the SP metadata
// of an upstream provider (api/people/upstream/saml-metadata.ts) — so the same key is the same
// certificate everywhere, in every process (the certificate is deterministic: fixed dates, the
// serial a digest of the rest).
import type { SigningKey } from '../credentials/jwt.js';
import type { Keyring } from '../credentials/keyring.js';
import { selfSignedCertificate } from './certificate.js';
import type { SamlSigningKey } from './sign.js';

// A certificate names a key here, it states no trust: its dates cover any time a peer may check
// them (2049 is the last year of X.509's UTCTime, which every peer reads).
const NOT_BEFORE = new Date('2026-01-01T00:00:00Z');
const NOT_AFTER = new Date('2049-12-31T23:59:59Z');
const SUBJECT = 'boxauth';

/** Certificates made, by kid: a process makes each once (a box keeps a handful of keys; the bound is a guard). */
const certificates = new Map<string, string>();

function samlKeyOf(key: SigningKey): SamlSigningKey {
  let certificatePem = certificates.get(key.kid);
  if (!certificatePem) {
    certificatePem = selfSignedCertificate({ privateKey: key.privateKey, publicKey: key.publicKey }, SUBJECT, NOT_BEFORE, NOT_AFTER);
    if (certificates.size >= 100) certificates.delete(certificates.keys().next().value!);
    certificates.set(key.kid, certificatePem);
  }
  return { privateKey: key.privateKey, certificatePem };
}

/** The key SAML messages are signed with now: the box's active RS256 key. */
export const boxSamlKey = (keyring: Pick<Keyring, 'activeFor'>): SamlSigningKey => samlKeyOf(keyring.activeFor('RS256'));

/**
 * Every RS256 key the box still publishes, the active one first: metadata names them all during a
 * rotation's overlap (a peer that reads it again trusts the new key before it signs, and the old
 * one while what it signed may still be checked), and an Assertion encrypted to the one before
 * still decrypts.
 */
export function boxSamlKeys(keyring: Pick<Keyring, 'activeFor' | 'jwks' | 'find'>): SamlSigningKey[] {
  const active = keyring.activeFor('RS256');
  const retired = keyring
    .jwks()
    .keys.filter((jwk) => jwk.alg === 'RS256' && jwk.kid !== active.kid)
    .map((jwk) => keyring.find(String(jwk.kid)))
    .filter((key): key is SigningKey => key !== undefined);
  return [active, ...retired].map(samlKeyOf);
}
