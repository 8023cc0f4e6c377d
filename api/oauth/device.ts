// The device authorization grant (RFC 8628), for devices that cannot show a
// browser (kubectl over ssh): POST /auth/device gives the device a device code and
// its person a short user code; the person enters the user code on the box
// (/auth/device/verify, behind sign-in and consent) while the device polls the
// token endpoint with grant_type=urn:ietf:params:oauth:grant-type:device_code.
import { randomBytes, randomInt } from 'node:crypto';
import type { Services } from '../services.js';
import { createDeviceCode, deviceCodeClient, findDeviceCodeForUpdate, markDeviceCodeUsed, recordPoll } from '../store/device-codes.js';
import { insertSessions } from '../store/sessions.js';
import { getUser } from '../store/users.js';
import { authenticateClient, presentedClient, type OAuthRequest } from './client-auth.js';
import { grantedScope } from './entitlements.js';
import { OAuthError, invalidGrant } from './errors.js';
import { commitThenRefuse, listedInGrantTypes, notIssuedToClient, type Grant, type Issued } from './grants/grant.js';
import { browserDetails, browserOf, hasOpenid, idTokenFor } from './openid.js';
import { scopeParam, tokenParams } from './params.js';
import { mint, tokenHash } from './tokens.js';

export const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
/** How long a person has to enter the code, and how often the device may ask. */
export const DEVICE_CODE_LIFETIME_SECONDS = 600;
const INTERVAL_SECONDS = 5;
/** RFC 8628 §6.1: letters a person reads and types without confusion (no vowels: no words). */
const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';

export const verificationUri = (svc: Services): string => `${svc.config.baseUrl}/auth/device/verify`;

function newUserCode(): string {
  return Array.from({ length: 8 }, () => USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)]).join('');
}

/** A user code as people write it (XXXX-XXXX), and back (case, spaces and dashes do not matter). */
export const formatUserCode = (code: string): string => `${code.slice(0, 4)}-${code.slice(4)}`;
export const normalizeUserCode = (typed: string): string => typed.toUpperCase().replace(/[^A-Z]/g, '');

/** POST /auth/device (RFC 8628 §3.1–3.2). */
export async function deviceAuthorization(svc: Services, request: OAuthRequest, body: unknown): Promise<Record<string, unknown>> {
  const params = tokenParams(body);
  const permitted = listedInGrantTypes(DEVICE_GRANT);
  // A client named by client_id alone and not permitted is refused as an unknown one (client-auth.ts).
  const { resource: client } = await authenticateClient(svc, presentedClient(request, params), 'if-confidential', permitted);
  if (!permitted(client)) {
    throw new OAuthError(
      'unauthorized_client',
      `client "${client.id}" may not use the device authorization grant (add ${DEVICE_GRANT} to its grant_types)`,
    );
  }
  const scope = grantedScope(client, scopeParam(params.scope));
  // A public client's device codes need no secret: each is a row, so an address gets a bounded number.
  svc.deviceThrottle.reserve([`addr:${request.address}`]);
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

/** grant_type=urn:ietf:params:oauth:grant-type:device_code (RFC 8628 §3.4–3.5). */
export const deviceCode: Grant = {
  type: DEVICE_GRANT,
  clientAuthentication: 'if-confidential',
  requiredParameters: ['device_code'],
  permits: listedInGrantTypes(DEVICE_GRANT),
  credential: { name: 'device_code', issuedTo: (svc, params) => deviceCodeClient(svc.pool, tokenHash(params.device_code!)) },

  async handle({ svc, params, client: { resource: client } }) {
    const hash = tokenHash(params.device_code!);
    const now = Date.now();
    // Polls are recorded even when refused (they set the pace of the next): commit, then refuse.
    return commitThenRefuse(svc.pool, async (tx): Promise<Issued | OAuthError> => {
      const found = await findDeviceCodeForUpdate(tx, hash);
      if (!found || found.clientId !== client.id) return notIssuedToClient('device_code');
      if (found.usedAt) return invalidGrant('device_code was already used');
      if (found.expiresAt.getTime() <= now) return new OAuthError('expired_token', 'the device code has expired: start again');
      if (found.decision === null) {
        const early = found.polledAt !== null && now - found.polledAt.getTime() < found.intervalSeconds * 1000;
        await recordPoll(tx, hash, found.intervalSeconds + (early ? 5 : 0));
        return early
          ? new OAuthError('slow_down', `poll at most every ${found.intervalSeconds + 5} seconds`)
          : new OAuthError('authorization_pending', 'the person has not entered the code yet');
      }
      await markDeviceCodeUsed(tx, hash);
      if (found.decision === 'denied') return new OAuthError('access_denied', 'the person denied the request');
      const user = await getUser(tx, found.userId!);
      if (!user) return invalidGrant('the user who allowed the request no longer exists');
      const settings = client.auth?.device_code ?? {};
      const browser = found.sid && found.authTime ? { sid: found.sid, authTime: found.authTime } : undefined;
      const { session, response } = mint(
        {
          type: 'device_code',
          origin: 'device_code',
          client,
          settings,
          userId: user.id,
          scope: found.scope,
          refresh: settings.refresh_token === true,
          details: browser ? browserDetails(browser) : null,
        },
        svc.config.baseUrl,
        svc.keyring.active,
        now,
      );
      await insertSessions(tx, [session]);
      const idToken =
        hasOpenid(found.scope) &&
        idTokenFor(svc, settings, {
          client,
          user,
          scope: found.scope,
          ...browserOf(session.details),
          accessToken: response.access_token,
          now,
        });
      return {
        session,
        response: { ...response, ...(found.scope ? { scope: found.scope } : {}), ...(idToken ? { id_token: idToken } : {}) },
      };
    });
  },
};
