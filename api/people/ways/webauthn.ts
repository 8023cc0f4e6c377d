// Passkeys (WebAuthn Level 3, docs/guides/passkeys.md): the relying party a box is, the options a
// browser is handed to make or use one, and the checks of what it sends back. The routes
// (api/http/routes/passkeys.ts) store the challenges and the keys; the library
// (@simplewebauthn/server) checks signatures, origins, the relying party's id and the flags.
//
// The relying party is the box's base URL: its id (rpID) is the host name, its origin the
// origin. A passkey is bound to the rpID, not to a path: a box behind a path prefix
// (https://example.com/auth-box) shares its passkeys' scope with every other application on
// example.com, and a box moved to another host name loses its passkeys (people add new ones).
import { createHmac } from 'node:crypto';
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/server';
import { ACR_PASSKEY, type Amr } from '../../credentials/acr.js';
import type { NewPasskey } from '../../store/factors.js';
import { nextStep, type PersonsFactors, type StepUpProof } from '../factors.js';

/**
 * The library, loaded at the first passkey a box sees: it brings a tree of ASN.1 and X.509 modules
 * that would add about a third of a second to every start of a box that never sees one.
 */
const webauthn = (): Promise<typeof import('@simplewebauthn/server')> => import('@simplewebauthn/server');

export interface RelyingParty {
  /** The host name of the box's base URL (no port, no path). */
  id: string;
  /** The origin passkeys are used from: scheme, host and port of the base URL. */
  origin: string;
  /** What an authenticator shows beside the person's name. */
  name: string;
}

/** The relying party a box is, from its base URL and its name. */
export function relyingParty(baseUrl: string, box: string): RelyingParty {
  const url = new URL(baseUrl);
  return { id: url.hostname, origin: url.origin, name: box };
}

/**
 * The user handle of a person's passkeys: an HMAC of their id under the box's factor key, so
 * that an authenticator (and anyone who reads it) holds neither the email nor the database id
 * (WebAuthn §14.6.1: "It is RECOMMENDED … that the user handle … not contain personally
 * identifying information").
 */
export function userHandle(key: Buffer, userId: number): Buffer {
  return createHmac('sha256', key).update(`webauthn-user-handle:${userId}`).digest();
}

/** What a passkey sign-in proved (RFC 8176): `hwk` bound to one device, `swk` synced; `user` when it verified its person. */
export function passkeyAmr(deviceType: 'singleDevice' | 'multiDevice', userVerified: boolean): Amr[] {
  return [deviceType === 'singleDevice' ? 'hwk' : 'swk', ...(userVerified ? (['user'] as const) : [])];
}

/**
 * Whether a sign-in step may be completed by adding a passkey: only when what the step holds
 * leaves the person nothing to give but a new factor (an enrolment: api/people/factors.ts). A
 * person who has a factor and proved only a password gives that factor first: adding a passkey
 * of their own making would skip it; a step-up whose last proof is not recent signs in again first.
 */
export function mayEnrolInStep(amr: readonly string[], person: PersonsFactors, stepUp?: StepUpProof): boolean {
  return nextStep(amr, person, ACR_PASSKEY, stepUp) === 'enrol';
}

/** A passkey name for the person's next one, when they give none: "Passkey 1", "Passkey 2"… not taken yet. */
export function defaultPasskeyName(taken: readonly string[]): string {
  for (let n = 1; ; n++) if (!taken.includes(`Passkey ${n}`)) return `Passkey ${n}`;
}

/** A passkey's name as a person gives it: trimmed, 1 to 64 characters, no control characters. */
export function passkeyName(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const name = value.trim();

  return name.length >= 1 && name.length <= 64 && !/[\u0000-\u001f\u007f]/.test(name) ? name : undefined;
}

/** A credential a person holds already, as options name it. */
export interface KnownCredential {
  credentialId: Buffer;
  transports: string[];
}

const described = (c: KnownCredential) => ({
  id: c.credentialId.toString('base64url'),
  transports: c.transports as NonNullable<PublicKeyCredentialRequestOptionsJSON['allowCredentials']>[number]['transports'],
});

/**
 * Options to make a passkey: discoverable (residentKey required, so it can sign in alone), user
 * verification required (a passkey alone is a sign-in), no attestation, and none of the person's
 * passkeys made again on the same authenticator.
 */
export async function registrationOptions(
  rp: RelyingParty,
  person: { handle: Buffer; email: string },
  existing: readonly KnownCredential[],
): Promise<PublicKeyCredentialCreationOptionsJSON> {
  const { generateRegistrationOptions } = await webauthn();
  return generateRegistrationOptions({
    rpName: rp.name,
    rpID: rp.id,
    userName: person.email,
    userID: new Uint8Array(person.handle),
    userDisplayName: person.email,
    attestationType: 'none',
    excludeCredentials: existing.map(described),
    authenticatorSelection: { residentKey: 'required', requireResidentKey: true, userVerification: 'required' },
  });
}

/**
 * Options to use a passkey: for a sign-in with a passkey alone, no credentials are named (the
 * browser offers the person's discoverable ones, in its autofill too); for a second factor,
 * only that person's.
 */
export async function authenticationOptions(
  rp: RelyingParty,
  allowed: readonly KnownCredential[],
): Promise<PublicKeyCredentialRequestOptionsJSON> {
  const { generateAuthenticationOptions } = await webauthn();
  return generateAuthenticationOptions({ rpID: rp.id, allowCredentials: allowed.map(described), userVerification: 'required' });
}

/** A passkey made, as it is to be stored (its name aside), and whether it verified its person. */
export interface MadePasskey extends Omit<NewPasskey, 'name'> {
  userVerified: boolean;
}

/** What every response is checked for: the challenge handed out, this box's origin and rpID, user verification. */
const expected = (rp: RelyingParty, challenge: string) => ({
  expectedChallenge: challenge,
  expectedOrigin: rp.origin,
  expectedRPID: rp.id,
  requireUserVerification: true,
});

/** WebAuthn's AuthenticatorTransport values: the browser's list is stored and handed back, so nothing else is kept. */
const TRANSPORTS = new Set(['ble', 'cable', 'hybrid', 'internal', 'nfc', 'smart-card', 'usb']);

export function knownTransports(given: unknown): string[] {
  return Array.isArray(given) ? [...new Set(given.filter((t): t is string => typeof t === 'string' && TRANSPORTS.has(t)))] : [];
}

/** Checks a browser's new passkey against the challenge it was handed; undefined when it does not hold. */
export async function checkRegistration(rp: RelyingParty, challenge: string, response: unknown): Promise<MadePasskey | undefined> {
  const { verifyRegistrationResponse } = await webauthn();
  try {
    const { verified, registrationInfo } = await verifyRegistrationResponse({
      response: response as RegistrationResponseJSON,
      ...expected(rp, challenge),
    });
    if (!verified || !registrationInfo) return undefined;
    const { credential } = registrationInfo;
    return {
      credentialId: Buffer.from(credential.id, 'base64url'),
      publicKey: Buffer.from(credential.publicKey),
      signCount: credential.counter,
      transports: knownTransports(credential.transports),
      deviceType: registrationInfo.credentialDeviceType,
      backedUp: registrationInfo.credentialBackedUp,
      userVerified: registrationInfo.userVerified,
    };
  } catch {
    return undefined; // malformed, another origin or rpID, no user verification: the same refusal
  }
}

/** A stored passkey, as an assertion is checked against it. */
export interface StoredPasskey extends KnownCredential {
  publicKey: Buffer;
  signCount: number;
}

/** What a valid assertion proved. */
export interface Assertion {
  newCount: number;
  deviceType: 'singleDevice' | 'multiDevice';
  userVerified: boolean;
}

/** The credential id an assertion names (base64url), when it names one. */
export function assertedCredentialId(response: unknown): Buffer | undefined {
  const id = (response as { id?: unknown } | null)?.id;
  return typeof id === 'string' && /^[A-Za-z0-9_-]{1,1400}$/.test(id) ? Buffer.from(id, 'base64url') : undefined;
}

/** The user handle an assertion carries (a discoverable credential's), when it carries one. */
export function assertedUserHandle(response: unknown): Buffer | undefined {
  const handle = (response as { response?: { userHandle?: unknown } } | null)?.response?.userHandle;
  return typeof handle === 'string' && /^[A-Za-z0-9_-]+$/.test(handle) ? Buffer.from(handle, 'base64url') : undefined;
}

/**
 * Checks an assertion against the passkey it names and the challenge handed out: signature,
 * origin, rpID, user verification, and a signature counter that grew (when the authenticator
 * keeps one: a counter that did not grow is a cloned key). Undefined when any of it fails.
 */
export async function checkAssertion(
  rp: RelyingParty,
  challenge: string,
  key: StoredPasskey,
  response: unknown,
): Promise<Assertion | undefined> {
  const { verifyAuthenticationResponse } = await webauthn();
  try {
    const { verified, authenticationInfo } = await verifyAuthenticationResponse({
      response: response as AuthenticationResponseJSON,
      ...expected(rp, challenge),
      credential: {
        id: key.credentialId.toString('base64url'),
        publicKey: new Uint8Array(key.publicKey),
        counter: key.signCount,
        transports: described(key).transports,
      },
    });
    // The library refuses a counter that did not grow (when either is non-zero: WebAuthn §7.2 step 21, a cloned key).
    if (!verified) return undefined;
    return {
      newCount: authenticationInfo.newCounter,
      deviceType: authenticationInfo.credentialDeviceType,
      userVerified: authenticationInfo.userVerified,
    };
  } catch {
    return undefined;
  }
}
