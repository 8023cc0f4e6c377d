// The `sub` a client sees of a person, and back: the one place that decides it (OpenID Connect
// Core §8). Every emitter (ID tokens, UserInfo, JWT access tokens, introspection, logout tokens,
// exchanged tokens) asks subjectFor; every reader of a sub a client presents (id_token_hint,
// AuthZEN, SCIM) asks subjectLookup, for the client that presents it.
//
// Core §8: "A Subject Identifier is a locally unique and never reassigned identifier within the
// Issuer for the End-User, which is intended to be consumed by the Client." Two types:
//   public — "This provides the same sub (subject) value to all Clients."
//   pairwise — "This provides a different sub value to each Client, so as not to enable Clients
//   to correlate the End-User's activities without permission."
//
// A public sub is the person's row id (`sequential`: what boxes that had people before
// release 036 handed out, kept so that their clients go on recognising them) or their opaque
// id (`opaque`, users.subject, a random UUID made with the row: it says nothing of how many
// people the box has). Which one is the box's setting (BOXAUTH_PUBLIC_SUBJECTS, else what
// migration 036 recorded).
//
// A pairwise sub is the person's opaque id (16 bytes) enciphered, as one AES-256 block, under a
// key of the sector: HMAC-SHA256(factor key, "pairwise-subject" ‖ sector). Core §8.1: "The
// Subject Identifier value MUST NOT be reversible by any party other than the OpenID Provider"
// — it is reversible by the box, under the key of the sector it was made for, and only there:
// deciphered under another sector's key it is 16 random bytes, nobody's id. So a sub client A
// saw, presented by client B, resolves to nobody. AES is a permutation, so the sub is stable
// and never shared by two people; the factor key lives outside the database and is the same
// for every replica and restart (api/bootstrap.ts ensureFactorKey), and is never logged.
//
// The sector (Core §8.1): "If the Client has provided a sector_identifier_uri in Dynamic Client
// Registration, the host component of that URI is used as the Sector Identifier". Without one,
// Core takes the host of the redirect_uri; the box takes the client's id instead, so that adding
// a redirect URI on another host never changes the subs a client was given, and two clients on
// one host are not linked unless they name one sector_identifier_uri. A named sector is taken
// here as written: that its document lists the client's redirect URIs (Registration §5) is checked
// before any sub is asked for, at the authorization request and the token endpoint
// (api/oauth/sector-identifier.ts).
import { createCipheriv, createDecipheriv, createHmac } from 'node:crypto';

/** What BOXAUTH_PUBLIC_SUBJECTS may say: a public sub is the person's row id, or their opaque id. */
export const PUBLIC_SUBJECTS = ['sequential', 'opaque'] as const;
export type PublicSubjects = (typeof PUBLIC_SUBJECTS)[number];

/** The box's side of every sub: its public kind and the key pairwise subs are made under. */
export interface SubjectSettings {
  publicSubjects: PublicSubjects;
  /** The factor key (BOXAUTH_FACTOR_KEY): never logged, the same for every replica. */
  key: Buffer;
}

/** What a sub is made of: the person's row id (a number, or its decimal string) and opaque id (users.subject, a UUID). */
export interface SubjectPerson {
  id: number | string;
  subject: string;
}

/** A client's side: Client.subject_type and sector_identifier_uri (OpenID Connect Registration §2). */
export interface SubjectClient {
  id: string;
  subject_type?: 'public' | 'pairwise';
  sector_identifier_uri?: string;
}

/** Where a presented sub leads: a row id, an opaque id (users.subject), or nobody. */
export type SubjectLookup = { id: number } | { subject: string } | undefined;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const SEQUENTIAL = /^[1-9][0-9]{0,15}$/;

/** The sector a pairwise client's subs are made for: its sector_identifier_uri's host, else the client itself. */
export function sectorOf(client: SubjectClient): string {
  if (client.sector_identifier_uri) {
    try {
      return `host:${new URL(client.sector_identifier_uri).host}`;
    } catch {
      // The schema admits only URLs; a record from elsewhere falls back to the client.
    }
  }
  return `client:${client.id}`;
}

const sectorKey = (settings: SubjectSettings, sector: string): Buffer =>
  createHmac('sha256', settings.key).update(`pairwise-subject\0${sector}`).digest();

const uuidBytes = (uuid: string): Buffer => Buffer.from(uuid.replaceAll('-', ''), 'hex');
const uuidOf = (bytes: Buffer): string => {
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
};

function pairwiseSubject(settings: SubjectSettings, sector: string, subject: string): string {
  const cipher = createCipheriv('aes-256-ecb', sectorKey(settings, sector), null).setAutoPadding(false);
  return Buffer.concat([cipher.update(uuidBytes(subject)), cipher.final()]).toString('base64url');
}

/** The `sub` `client` sees of `person` (Core §8). */
export function subjectFor(settings: SubjectSettings, client: SubjectClient, person: SubjectPerson): string {
  if (client.subject_type === 'pairwise') return pairwiseSubject(settings, sectorOf(client), person.subject);
  return settings.publicSubjects === 'opaque' ? person.subject : String(person.id);
}

/**
 * Whom `sub`, presented by `client`, names: read as that client's subs are made, and only so. A
 * pairwise sub of another sector deciphers to no UUID of version 4 (but once in 64), and to a
 * UUID nobody has (but once in 2^122); a public sub presented by a pairwise client is nobody.
 */
export function subjectLookup(settings: SubjectSettings, client: SubjectClient, sub: string): SubjectLookup {
  if (client.subject_type === 'pairwise') {
    const bytes = /^[A-Za-z0-9_-]{22}$/.test(sub) ? Buffer.from(sub, 'base64url') : undefined;
    if (bytes?.length !== 16) return undefined;
    const decipher = createDecipheriv('aes-256-ecb', sectorKey(settings, sectorOf(client)), null).setAutoPadding(false);
    const subject = uuidOf(Buffer.concat([decipher.update(bytes), decipher.final()]));
    return UUID.test(subject) ? { subject } : undefined;
  }
  if (settings.publicSubjects === 'opaque') return UUID.test(sub) ? { subject: sub } : undefined;
  return SEQUENTIAL.test(sub) ? { id: Number(sub) } : undefined;
}
