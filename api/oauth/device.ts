// The device authorization grant (RFC 8628), for devices that cannot show a
// browser (kubectl over ssh): POST /auth/device gives the device a device code and
// its person a short user code; the person enters the user code on the box
// (/auth/device/verify, behind sign-in and consent) while the device polls the
// token endpoint with grant_type=urn:ietf:params:oauth:grant-type:device_code.
import { randomBytes, randomInt } from 'node:crypto';
import type { Config } from '../config.js';
import type { Pool } from '../db/pool.js';
import type { Keyring } from '../credentials/keyring.js';
import { type FailureThrottle, addressKey } from '../credentials/throttle.js';
import { createDeviceCode, decideDeviceCode, findPendingByUserCode, type DeviceCode } from '../store/device-codes.js';
import { whileSignedIn } from '../credentials/closing.js';
import { authenticateClient, presentedClient, type OAuthRequest, type ClientAuthServices } from './client-auth.js';
import { grantedScope } from './entitlements.js';
import { listedInGrantTypes, notListedInGrantTypes } from './grant-types.js';
import { scopeParam, tokenParams } from './params.js';
import { tokenHash } from '../credentials/tokens.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: Config;
  pool: Pool;
  keyring: Keyring;
  deviceThrottle: FailureThrottle;
}

/** What the device authorization endpoint needs. */
export type DeviceServices = Pick<Needs, 'config' | 'deviceThrottle' | 'keyring' | 'pool'> & ClientAuthServices;

export const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
/** How long a person has to enter the code, and how often the device may ask. */
export const DEVICE_CODE_LIFETIME_SECONDS = 600;
const INTERVAL_SECONDS = 5;
/** RFC 8628 §6.1: letters a person reads and types without confusion (no vowels: no words). */
const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';

export const verificationUri = (svc: DeviceServices): string => `${svc.config.baseUrl}/auth/device/verify`;

function newUserCode(): string {
  return Array.from({ length: 8 }, () => USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)]).join('');
}

/** A user code as people write it (XXXX-XXXX), and back (case, spaces and dashes do not matter). */
export const formatUserCode = (code: string): string => `${code.slice(0, 4)}-${code.slice(4)}`;
export const normalizeUserCode = (typed: string): string => typed.toUpperCase().replace(/[^A-Z]/g, '');

/** The pending, unexpired code whose user code a person typed on the verification page (RFC 8628 §3.3). */
export function pendingDeviceCode(svc: Pick<Needs, 'pool'>, typed: string): Promise<DeviceCode | undefined> {
  return findPendingByUserCode(svc.pool, normalizeUserCode(typed));
}

/**
 * Records a person's answer to the code they typed (RFC 8628 §3.3), with the sign-in that gave
 * it, while the browser that gave it stays signed in (whileSignedIn): a sign-out racing it ends
 * what it allowed. False when the code is no longer pending, or the browser was signed out.
 */
export async function answerDeviceCode(
  svc: Pick<Needs, 'pool'>,
  typed: string,
  answer: Parameters<typeof decideDeviceCode>[2],
): Promise<boolean> {
  return (await whileSignedIn(svc, answer.sid, (tx) => decideDeviceCode(tx, normalizeUserCode(typed), answer))) ?? false;
}

/** POST /auth/device (RFC 8628 §3.1–3.2). */
export async function deviceAuthorization(svc: DeviceServices, request: OAuthRequest, body: unknown): Promise<Record<string, unknown>> {
  const params = tokenParams(body);
  const permitted = listedInGrantTypes(DEVICE_GRANT);
  // A client named by client_id alone and not permitted is refused as an unknown one (client-auth.ts).
  const { resource: client } = await authenticateClient(svc, presentedClient(request, params), 'if-confidential', permitted);
  if (!permitted(client)) throw notListedInGrantTypes(client, DEVICE_GRANT);
  const scope = grantedScope(client, scopeParam(params.scope));
  // A public client's device codes need no secret: each is a row, so an address gets a bounded number.
  svc.deviceThrottle.reserve([addressKey(request.address)]);
  const deviceCode = randomBytes(32).toString('base64url');
  let userCode = newUserCode();
  const code = {
    clientId: client.id,
    scope,
    expiresAt: new Date(Date.now() + DEVICE_CODE_LIFETIME_SECONDS * 1000),
    intervalSeconds: INTERVAL_SECONDS,
  };
  while (!(await createDeviceCode(svc.pool, tokenHash(deviceCode), { ...code, userCode }))) userCode = newUserCode();
  const uri = verificationUri(svc);
  return {
    device_code: deviceCode,
    user_code: formatUserCode(userCode),
    verification_uri: uri,
    verification_uri_complete: `${uri}?user_code=${formatUserCode(userCode)}`,
    expires_in: DEVICE_CODE_LIFETIME_SECONDS,
    interval: INTERVAL_SECONDS,
  };
}
