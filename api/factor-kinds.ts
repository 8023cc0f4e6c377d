// The kinds of second factor a person enrols (docs/guides/second-factors.md), each said once: every
// list of them is derived from FACTOR_KINDS below — the kind type (a `factors` row's kind,
// api/store/factors.ts), the OpenAPI enum (api/schema/openapi.ts), the audit's and the Shared
// Signals' vocabularies (./audit.ts, api/ssf/events.ts), the label a page shows, and how a kind
// counts toward "has a factor" (factorCount, the one answer to that question for the sign-in's
// steps, the second-factor page and a removal). The ways that check a kind are api/people/ways/'s.
// It is a base module so that every floor may read it (the base imports no floor); each kind is
// declared by its way (api/people/ways/), and copied here by `make generate`.
import { DECLARED_FACTOR_KINDS } from './factor-kinds-declared.js';

/** What is said once of one kind of factor. */
export interface FactorKindSpec<K extends string = string> {
  /** Its name, as a `factors` row, the REST API, the audit and a notice mail say it. */
  kind: K;
  /** Where lists show it: lowest first. */
  position: number;
  /** Its label on the pages (a key of api/messages/; a unit test finds it in every catalogue). */
  label: `factor.${string}Kind`;
  /** How a factor mail names it, in words of the catalogues ("an authenticator app"): the mail's {{factor}}. */
  mailWord: `factor.${string}InMail`;
  /**
   * Its credential_type in a CAEP credential-change event (CAEP 1.0 §3.3): a passkey is
   * `fido2-platform` (the box does not learn whether it is synced or on a security key), an
   * authenticator app's codes `app`. Codes by email fit none of §3.3's values (`phone-sms` and
   * `phone-voice` name a phone number, `app` an authenticator app): `email-code`, a value agreed
   * beyond its list as `recovery-code` is.
   */
  ssfCredential: string;
  /** A code an app computes from a key it shares with the box (api/people/ways/app-codes.ts): how it is set up, typed and worded. */
  app?: AppCodesSpec;
  /** A code the box mails to the person's proven address (api/people/ways/email-code.ts): how it is asked for, typed and worded. */
  mailed?: MailedCodesSpec;
  /** A WebAuthn credential, given and added by the passkeys script (api/people/ways/passkey.ts): where its ceremonies are, its words. */
  webauthn?: WebAuthnSpec;
}

/**
 * A kind whose codes an app computes from a key shared once (RFC 4226, RFC 6238): the one module
 * api/people/ways/app-codes.ts checks, sets up and words every such kind from this.
 */
export interface AppCodesSpec {
  /** What moves a code on: a time step of `period` seconds (RFC 6238), or a counter tried up to `lookAhead` codes ahead (RFC 4226 §7.4). */
  moving: { period: number } | { lookAhead: number };
  /** The factor's name when set up (as `factors.name`). */
  name: string;
  /** Its page on the person's own page, /auth/account/<path> (and …/confirm). */
  path: string;
  /** The form field its code is posted in. */
  field: string;
  /**
   * false: read and counted, but not offered to set up (docs/operations/upgrades.md "A new kind": the
   * release that brings a kind reads it, the next offers it, since the one before would let a person
   * whose only factor is new in with a password alone). Offered when left out.
   */
  offered?: boolean;
  /** Its words (keys of api/messages/): the second factor's field and hint, and the pages that set it up. */
  words: {
    code: `step.${string}`;
    hint: `step.${string}`;
    heading: `enrol.${string}`;
    scan: `enrol.${string}`;
    setUp: `account.${string}`;
    already: `account.${string}`;
  };
}

/**
 * A kind whose codes the box mails, one at a time, each asked for by "send a code" (a form posting
 * `send=<kind>`): the one module api/people/ways/email-code.ts mails, checks and sets up every such
 * kind from this. Its HTML ids are its kind's: `send-<kind>-code`, `<kind>-code-sent`, `<kind>-codes`.
 */
export interface MailedCodesSpec {
  /** The factor's name when set up (as `factors.name`). */
  name: string;
  /** Its page on the person's own page, /auth/account/<path>. */
  path: string;
  /** The form field its code is posted in. */
  field: string;
  /** Its words (keys of api/messages/): its section and page, "send a code", its refusals, the account page's. */
  words: {
    heading: `email.${string}`;
    /** What the codes are, to {email}. */
    intro: `email.${string}`;
    send: `email.${string}`;
    /** A code was mailed to {email}. */
    sent: `email.${string}`;
    code: `email.${string}`;
    hint: `email.${string}`;
    wrongCode: `email.${string}`;
    /** Too many mails: {minutes}. */
    tooMany: `email.${string}`;
    /** Not offered to this person: their address is not proven. */
    addressFirst: `email.${string}`;
    /** Not offered by the box. */
    notOffered: `email.${string}`;
    orSetUp: `enrol.${string}`;
    setUp: `account.${string}`;
    already: `account.${string}`;
  };
}

/**
 * A kind given and added by a WebAuthn ceremony in the browser (/assets/passkeys.js): phishing-resistant,
 * the kind a sign-in asked for `phr` wants (api/credentials/acr.ts ACR_PASSKEY). Its HTML ids are
 * its kind's: `use-<kind>`, `add-<kind>`.
 */
export interface WebAuthnSpec {
  /** Its ceremonies, /auth/<path>/{authenticate,register}[/options], and its page on the person's own page, /auth/account/<path>. */
  path: string;
  /** Its words (keys of api/messages/): its buttons, the account page's link, and its offer on the enrolment page. */
  words: { use: `step.${string}`; add: `${string}.${string}`; title: `${string}.${string}`; orAdd: `enrol.${string}` };
}

/**
 * Every kind of factor, in the order lists show them: each declared by its way (the
 * `FACTOR_KIND` of api/people/ways/<way>.ts), gathered by `make generate` (./factor-kinds-declared.ts).
 */
export const FACTOR_KINDS = DECLARED_FACTOR_KINDS satisfies Record<string, FactorKindSpec>;

/** A kind of second factor. */
export type FactorKind = keyof typeof FACTOR_KINDS;

/** Whether `name` is a kind of factor (a row or a mail's detail written by another release may name one this one does not know). */
export const isFactorKind = (name: string): name is FactorKind => Object.hasOwn(FACTOR_KINDS, name);

/** Every kind of factor, in the order lists show them. */
export const FACTOR_KIND_NAMES = Object.keys(FACTOR_KINDS) as FactorKind[];

type Specs = typeof FACTOR_KINDS;
/** A kind whose codes an app computes (its spec has `app`). */
export type AppFactorKind = { [K in FactorKind]: Specs[K] extends { app: AppCodesSpec } ? K : never }[FactorKind];

/** Whether `kind` is one whose codes an app computes. */
export const isAppKind = (kind: FactorKind): kind is AppFactorKind => 'app' in FACTOR_KINDS[kind];

/** Every kind whose codes an app computes, in the order lists show them. */
export const APP_FACTOR_KINDS: readonly AppFactorKind[] = FACTOR_KIND_NAMES.filter(isAppKind);

/** Each app kind's `app`, as declared (its words keys of the catalogues, which the type checker holds to them). */
type AppSpecs = { [K in AppFactorKind]: Extract<Specs[K], { app: AppCodesSpec }>['app'] };
const APPS = Object.fromEntries(APP_FACTOR_KINDS.map((kind) => [kind, (FACTOR_KINDS[kind] as FactorKindSpec).app])) as AppSpecs;

/** How an app's codes of `kind` are set up, typed and worded. */
export const appOf = <K extends AppFactorKind>(kind: K): AppSpecs[K] => APPS[kind];

/** The app kinds a person may set up (not those declared `offered: false`), in the order lists show them. */
export const OFFERED_APP_KINDS: readonly AppFactorKind[] = APP_FACTOR_KINDS.filter(
  (kind) => (appOf(kind) as AppCodesSpec).offered !== false,
);

/** The app kind whose field a form holds a code in, if any (the second factor's and the enrolment's forms). */
export const appKindOfForm = (body: Record<string, unknown>): AppFactorKind | undefined =>
  APP_FACTOR_KINDS.find((kind) => typeof body[appOf(kind).field] === 'string' && (body[appOf(kind).field] as string).trim() !== '');

/** A kind whose codes the box mails (its spec has `mailed`). */
export type MailedFactorKind = { [K in FactorKind]: Specs[K] extends { mailed: MailedCodesSpec } ? K : never }[FactorKind];

/** Whether `kind` is one whose codes the box mails. */
export const isMailedKind = (kind: FactorKind): kind is MailedFactorKind => 'mailed' in FACTOR_KINDS[kind];

/** Every kind whose codes the box mails, in the order lists show them. */
export const MAILED_FACTOR_KINDS: readonly MailedFactorKind[] = FACTOR_KIND_NAMES.filter(isMailedKind);

type MailedSpecs = { [K in MailedFactorKind]: Extract<Specs[K], { mailed: MailedCodesSpec }>['mailed'] };

/** How mailed codes of `kind` are asked for, typed and worded. */
export const mailedOf = <K extends MailedFactorKind>(kind: K): MailedSpecs[K] =>
  (FACTOR_KINDS[kind] as FactorKindSpec).mailed as MailedSpecs[K];

/** The mailed kind a form asks a code of ("send a code": `send=<kind>`), if any. */
export const mailedKindToSend = (body: Record<string, unknown>): MailedFactorKind | undefined =>
  MAILED_FACTOR_KINDS.find((kind) => body.send === kind);

/** The mailed kind whose field a form holds a code in, if any. */
export const mailedKindOfForm = (body: Record<string, unknown>): MailedFactorKind | undefined =>
  MAILED_FACTOR_KINDS.find(
    (kind) => typeof body[mailedOf(kind).field] === 'string' && (body[mailedOf(kind).field] as string).trim() !== '',
  );

/** A kind given by a WebAuthn ceremony (its spec has `webauthn`). */
export type WebAuthnFactorKind = { [K in FactorKind]: Specs[K] extends { webauthn: WebAuthnSpec } ? K : never }[FactorKind];

/** Whether `kind` is given by a WebAuthn ceremony. */
export const isWebAuthnKind = (kind: FactorKind): kind is WebAuthnFactorKind => 'webauthn' in FACTOR_KINDS[kind];

/** Every kind given by a WebAuthn ceremony, in the order lists show them: the ones a sign-in asked for `phr` wants. */
export const WEBAUTHN_FACTOR_KINDS: readonly WebAuthnFactorKind[] = FACTOR_KIND_NAMES.filter(isWebAuthnKind);

type WebAuthnSpecs = { [K in WebAuthnFactorKind]: Extract<Specs[K], { webauthn: WebAuthnSpec }>['webauthn'] };

/** Whether a person holds a factor of a WebAuthn kind: what a sign-in asked for acr phr wants them to give. */
export const holdsWebAuthn = (person: HeldFactors): boolean => WEBAUTHN_FACTOR_KINDS.some((kind) => person[kind] > 0);

/** Where a WebAuthn kind's ceremonies are, and its words. */
export const webauthnOf = <K extends WebAuthnFactorKind>(kind: K): WebAuthnSpecs[K] =>
  (FACTOR_KINDS[kind] as FactorKindSpec).webauthn as WebAuthnSpecs[K];

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
