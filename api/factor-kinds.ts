// The kinds of second factor a person enrols (docs/guides/second-factors.md), each said once: every
// list of them is derived from FACTOR_KINDS below — the kind type (a `factors` row's kind,
// api/store/factors.ts), the OpenAPI enum (api/schema/openapi.ts), the audit's and the Shared
// Signals' vocabularies (./audit.ts, api/ssf/events.ts), the label a page shows, and how a kind
// counts toward "has a factor" (factorCount, the one answer to that question for the sign-in's
// steps, the second-factor page and a removal). The ways that check a kind are api/people/ways/'s.
// It is a base module so that every floor may read it (the base imports no floor).

/** What is said once of one kind of factor. */
export interface FactorKindSpec<K extends string = string> {
  /** Its name, as a `factors` row, the REST API, the audit and a notice mail say it. */
  kind: K;
  /** Its label on the pages (a key of api/ui/messages/; a unit test finds it in every catalogue). */
  label: `factor.${string}Kind`;
  /**
   * Its credential_type in a CAEP credential-change event (CAEP 1.0 §3.3): a passkey is
   * `fido2-platform` (the box does not learn whether it is synced or on a security key), an
   * authenticator app's codes `app`. Codes by email fit none of §3.3's values (`phone-sms` and
   * `phone-voice` name a phone number, `app` an authenticator app): `email-code`, a value agreed
   * beyond its list as `recovery-code` is.
   */
  ssfCredential: string;
}

/** Every kind of factor, in the order lists show them. */
export const FACTOR_KINDS = {
  passkey: { kind: 'passkey', label: 'factor.passkeyKind', ssfCredential: 'fido2-platform' },
  totp: { kind: 'totp', label: 'factor.appKind', ssfCredential: 'app' },
  // RFC 8176 `otp` when given, as an app's code: a one-time password. NIST SP 800-63B §5.1.3.1 does
  // not count email as an out-of-band authenticator (docs/guides/second-factors.md says what it protects).
  email: { kind: 'email', label: 'factor.emailKind', ssfCredential: 'email-code' },
} as const satisfies Record<string, FactorKindSpec>;

/** A kind of second factor. */
export type FactorKind = keyof typeof FACTOR_KINDS;

/** Whether `name` is a kind of factor (a row or a mail's detail written by another release may name one this one does not know). */
export const isFactorKind = (name: string): name is FactorKind => Object.hasOwn(FACTOR_KINDS, name);

/** Every kind of factor, in the order lists show them. */
export const FACTOR_KIND_NAMES = Object.keys(FACTOR_KINDS) as FactorKind[];

/**
 * How many confirmed factors of each kind a person holds, as a sign-in counts them
 * (api/store/factors.ts factorState counts the rows by kind): a new kind needs nothing here.
 */
export type HeldFactors = Readonly<Record<FactorKind, number>>;

/** A person who holds no factor (a base for a count, or for a test's person). */
export const NO_FACTORS: HeldFactors = Object.freeze(
  Object.fromEntries(FACTOR_KIND_NAMES.map((kind) => [kind, 0])) as Record<FactorKind, number>,
);

/**
 * Recovery codes: no factor of their own (they stand in for a lost one, and go with the last),
 * but enrolled, used and removed as one in the audit trail and the Shared Signals. CAEP has no
 * name for them: `recovery-code` (CAEP allows values agreed beyond its list).
 */
export const RECOVERY_CODES = { kind: 'recovery-codes', ssfCredential: 'recovery-code' } as const;

/** What the audit and the Shared Signals say a factor event was about: a kind, or the recovery codes. */
export type CredentialKind = FactorKind | (typeof RECOVERY_CODES)['kind'];

/** A CAEP credential_type of `kind` (CAEP 1.0 §3.3). */
export const ssfCredentialOf = (kind: CredentialKind): string =>
  kind === RECOVERY_CODES.kind ? RECOVERY_CODES.ssfCredential : FACTOR_KINDS[kind].ssfCredential;

/**
 * How many factors a person holds, of every kind: the one answer to "does this person have a
 * factor?" (more than none), which their sign-in's steps, the second-factor page and a removal
 * of their own all ask.
 */
export function factorCount(person: HeldFactors): number {
  return FACTOR_KIND_NAMES.reduce((n, kind) => n + person[kind], 0);
}

/** Whether a person holds a factor of any kind (factorCount). */
export const hasFactor = (person: HeldFactors): boolean => factorCount(person) > 0;
