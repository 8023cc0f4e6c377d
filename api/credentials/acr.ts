// What a sign-in proved, and the class of sign-in asked for (docs/guides/second-factors.md): the
// vocabulary the authorization server, the decision point and people share.
//
// A sign-in proves factors, named by their RFC 8176 `amr` values: `pwd` a password, `otp` a
// one-time code (TOTP, or a recovery code), `hwk`/`swk` a passkey bound to one device or
// synced between several, `user` the authenticator verified its person (a PIN, a
// fingerprint), `mfa` more than one factor. Its class (`acr`) follows from them, on one
// ladder: a password alone; several factors; a passkey (phishing-resistant: OpenID EAP ACR
// Values 1.0 `phr`, "an authentication mechanism where a party potentially under the control
// of the Relying Party cannot gain sufficient information to be able to successfully
// authenticate to the End User's OpenID Provider as if that party were the End User").
// What asks for a class: a request's acr_values, its Client's minimum_acr, a person's group
// that requires a second factor (api/people/factors.ts), an App policy's acr. The strongest
// of them is wanted.

/** The classes of sign-in, weakest first (discovery's acr_values_supported). */
export const ACR_LADDER = ['urn:boxauth:acr:password', 'urn:boxauth:acr:mfa', 'phr'] as const;
export type Acr = (typeof ACR_LADDER)[number];
export const ACR_PASSWORD: Acr = 'urn:boxauth:acr:password';
export const ACR_MFA: Acr = 'urn:boxauth:acr:mfa';
export const ACR_PASSKEY: Acr = 'phr';

/** RFC 8176 values the box says of its sign-ins. */
export type Amr = 'pwd' | 'otp' | 'hwk' | 'swk' | 'user' | 'mfa';

export function isAcr(value: unknown): value is Acr {
  return typeof value === 'string' && (ACR_LADDER as readonly string[]).includes(value);
}

const rank = (acr: Acr): number => ACR_LADDER.indexOf(acr);

/** Whether a sign-in of class `have` is enough for `want`. */
export function meets(have: Acr, want: Acr | undefined): boolean {
  return want === undefined || rank(have) >= rank(want);
}

/** The strongest of what is asked (undefined: nothing is). */
export function strongest(...wanted: (Acr | undefined)[]): Acr | undefined {
  let best: Acr | undefined;
  for (const w of wanted) if (w !== undefined && (best === undefined || rank(w) > rank(best))) best = w;
  return best;
}

/** The class of a sign-in that proved `amr`. */
export function acrOf(amr: readonly string[]): Acr {
  if (amr.includes('hwk') || amr.includes('swk')) return ACR_PASSKEY;
  if (amr.includes('mfa')) return ACR_MFA;
  return ACR_PASSWORD;
}

/**
 * What a sign-in proved, once one more factor is proven: the values, each once, in the
 * ladder's order, with `mfa` when two kinds of factor (or a passkey that verified its
 * person) are among them.
 */
export function withFactor(amr: readonly string[], added: readonly Amr[]): Amr[] {
  const all = new Set<string>([...amr, ...added]);
  all.delete('mfa');
  const factors = ['pwd', 'otp', 'hwk', 'swk'].filter((f) => all.has(f)).length;
  const passkeyVerified = (all.has('hwk') || all.has('swk')) && all.has('user');
  if (factors > 1 || passkeyVerified) all.add('mfa');
  return (['pwd', 'otp', 'hwk', 'swk', 'user', 'mfa'] as const).filter((v) => all.has(v));
}

/**
 * The class a request's acr_values asks for (OpenID Connect Core §3.1.2.1: "Space-separated
 * string that specifies the acr values that the Authorization Server is being requested to
 * use for processing this Authentication Request, with the values appearing in order of
 * preference"). Any one of them satisfies the request, so the weakest the box knows is what it
 * must at least meet; values it does not know are left aside (the claim is voluntary).
 */
export function acrAsked(acrValues: string | undefined): Acr | undefined {
  return weakest((acrValues ?? '').split(' '));
}

/** What the sign-in behind a token session proved, as its details record it (api/oauth/openid.ts browserDetails); null when they record none. */
export function amrOf(details: Record<string, unknown> | null): string[] | null {
  const amr = details?.amr;
  return Array.isArray(amr) && amr.every((v) => typeof v === 'string') ? amr : null;
}

/** What a token says of the sign-in behind it: what it proved, its class, and when (seconds). */
export interface SignInClass {
  amr: string[];
  acr: Acr;
  authTime: number | null;
}

/**
 * The sign-in a token session speaks for (introspection, the decision point, a JWT access
 * token): none without a person, or without a browser sign-in behind it (a `sid`); a session
 * from before the box recorded `amr` proved a password.
 */
export function signInOf(session: { userId: number | null; details: Record<string, unknown> | null }): SignInClass | null {
  if (session.userId === null || typeof session.details?.sid !== 'string') return null;
  const amr = amrOf(session.details) ?? ['pwd'];
  const authTime = typeof session.details.auth_time === 'number' ? session.details.auth_time : null;
  return { amr, acr: acrOf(amr), authTime };
}

/** The weakest of the classes asked (any one of them would do); undefined when none is. */
export function weakest(wanted: readonly string[]): Acr | undefined {
  let best: Acr | undefined;
  for (const w of wanted.filter(isAcr)) if (best === undefined || rank(w) < rank(best)) best = w;
  return best;
}
