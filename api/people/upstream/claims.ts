// What an OpenID or OAuth 2.0 provider's claims say of a person, by the claim names its settings
// give: only a string or number is a subject, only an address the box takes of anyone is an email
// (./profile.ts emailFrom), only a boolean true verifies it, only strings are groups. A claim of
// another shape is as if absent.
import { UpstreamError, emailFrom, type UpstreamProfile } from './profile.js';

export interface ClaimNames {
  subject: string;
  email: string;
  /** Unset: no email of this provider is verified. */
  emailVerified: string | undefined;
  name: string;
  groups: string;
}

export type ClaimSettings = Partial<ClaimNames>;

/** An OpenID provider's claim names: its settings, else the standard ones (Core §5.1). */
export function oidcClaimNames(settings: ClaimSettings = {}): ClaimNames {
  return { subject: 'sub', email: 'email', emailVerified: 'email_verified', name: 'name', groups: 'groups', ...defined(settings) };
}

/** An OAuth 2.0 service's claim names: `id` is its usual subject, and only a named claim verifies an email. */
export function oauth2ClaimNames(settings: ClaimSettings = {}): ClaimNames {
  return { subject: 'id', email: 'email', emailVerified: undefined, name: 'name', groups: 'groups', ...defined(settings) };
}

function defined(settings: ClaimSettings): ClaimSettings {
  return Object.fromEntries(Object.entries(settings).filter(([, v]) => v !== undefined));
}

const own = (claims: Record<string, unknown>, name: string): unknown => (Object.hasOwn(claims, name) ? claims[name] : undefined);

const strings = (value: unknown): string[] => (Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : []);

/** The profile `claims` describe; `amr` is the ID token's (RFC 8176), none for OAuth 2.0. */
export function profileOf(claims: Record<string, unknown>, names: ClaimNames, amr: unknown = undefined): UpstreamProfile {
  const subject = own(claims, names.subject);
  if (!(typeof subject === 'string' && subject !== '') && !(typeof subject === 'number' && Number.isSafeInteger(subject))) {
    throw new UpstreamError('invalid', `no subject (claim ${names.subject})`);
  }
  const email = emailFrom(own(claims, names.email));
  const name = own(claims, names.name);
  return {
    subject: String(subject),
    ...email,
    emailVerified: email.email !== undefined && names.emailVerified !== undefined && own(claims, names.emailVerified) === true,
    ...(typeof name === 'string' && name !== '' ? { name } : {}),
    groups: strings(own(claims, names.groups)),
    claims,
    amr: strings(amr),
  };
}
