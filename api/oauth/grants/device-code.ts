// grant_type=urn:ietf:params:oauth:grant-type:device_code (RFC 8628 §3.4–3.5): the
// device polls with the device code it got from POST /auth/device (../device.ts)
// until its person allows or denies it on /auth/device/verify. Each poll is
// recorded, refused or not (it sets the pace of the next: slow_down); an allowed
// code is used once.
import type { Queryable, Transaction } from '../../db/pool.js';
import {
  deviceCodeClient,
  findDeviceCodeForUpdate,
  markDeviceCodeUsed,
  peekDeviceCode,
  recordPoll,
  type DeviceCode,
} from '../../store/device-codes.js';
import { insertSessions, type SessionRow } from '../../store/sessions.js';
import { getUser, type UserRow } from '../../store/users.js';
import { DEVICE_GRANT } from '../device.js';
import { OAuthError, invalidGrant } from '../../credentials/errors.js';
import { browserDetails, browserOf, hasOpenid, idTokenFor } from '../openid.js';
import { shapedClaimsFor } from '../shaped-claims.js';
import { grantedResource } from '../entitlements.js';
import { mint, tokenHash } from '../../credentials/tokens.js';
import { subjectFor } from '../../credentials/subjects.js';
import { commitThenRefuse, certificateBound, dpopBound, notIssuedToClient, type Grant, type Issued } from './grant.js';
import { listedInGrantTypes } from '../grant-types.js';
import { withHooked } from '../token-hooks.js';

/**
 * Everything this grant does to the database (fosite's storage interfaces: a flow states the
 * methods it needs). A poll runs in one transaction that commits even when it refuses
 * (commitThenRefuse): `tx` holds the device code's lock from the read to the commit.
 */
export interface DeviceCodeStore {
  /** Whom a device code was issued to, whatever became of it since: for a client named by client_id alone. */
  deviceCodeClient(db: Queryable, hash: Buffer): Promise<string | undefined>;
  /** The device code as it is now, without a lock: what the Hooks are asked about before the transaction. */
  peekDeviceCode(db: Queryable, hash: Buffer): Promise<DeviceCode | undefined>;
  /** The device code, locked until `tx` ends; undefined when there is none. */
  findDeviceCodeForUpdate(tx: Transaction, hash: Buffer): Promise<DeviceCode | undefined>;
  /** Records a poll refused for want of a decision, and the interval the next must keep. */
  recordPoll(tx: Transaction, hash: Buffer, intervalSeconds: number): Promise<void>;
  /** Spends the device code: it answers once, allowed or denied. */
  markDeviceCodeUsed(tx: Transaction, hash: Buffer): Promise<void>;
  /** The person who allowed it. */
  getUser(tx: Transaction, id: number): Promise<UserRow | undefined>;
  /** The person of a grant as the client's shaped claims see them (Client.claims), read afresh. */
  /** The session the poll issues. */
  insertSessions(tx: Transaction, sessions: SessionRow[]): Promise<void>;
}

const store: DeviceCodeStore = {
  deviceCodeClient,
  peekDeviceCode,
  findDeviceCodeForUpdate,
  recordPoll,
  markDeviceCodeUsed,
  getUser,
  insertSessions,
};

export const deviceCode: Grant = {
  type: DEVICE_GRANT,
  clientAuthentication: 'if-confidential',
  requiredParameters: ['device_code'],
  permits: listedInGrantTypes(DEVICE_GRANT),
  credential: { name: 'device_code', issuedTo: (svc, params) => store.deviceCodeClient(svc.pool, tokenHash(params.device_code!)) },

  // Only a code its person allowed is about to issue: a pending poll asks no Hook (it is answered at
  // the device's pace), nor a denied, used or expired code (the poll refuses, saying why).
  async prospect(svc, params, client) {
    const found = await store.peekDeviceCode(svc.pool, tokenHash(params.device_code!));
    if (!found || found.clientId !== client.id || found.usedAt || found.decision !== 'allowed') return undefined;
    if (found.expiresAt.getTime() <= Date.now()) return undefined;
    const { userId, scope, sid, authTime, amr } = found;
    return { userId, scope, audience: null, details: sid && authTime ? browserDetails({ sid, authTime, amr }) : null };
  },

  async handle({ svc, params, client: { resource: client, method }, dpop, certificate, hooked }) {
    // RFC 8707 §2.2: a resource may only name what was granted. The device authorization request
    // takes none (POST /auth/device reads no resource), so its tokens are for no resource, and a
    // resource here is invalid_target before the poll is looked at: nothing is spent or recorded.
    grantedResource(null, params.resource, 'device code');
    const hash = tokenHash(params.device_code!);
    const now = Date.now();
    // Polls are recorded even when refused (they set the pace of the next): commit, then refuse.
    return commitThenRefuse(svc.pool, async (tx): Promise<Issued | OAuthError> => {
      const found = await store.findDeviceCodeForUpdate(tx, hash);
      if (!found || found.clientId !== client.id) return notIssuedToClient('device_code');
      if (found.usedAt) return invalidGrant('device_code was already used');
      if (found.expiresAt.getTime() <= now) return new OAuthError('expired_token', 'the device code has expired: start again');
      if (found.decision === null) {
        const early = found.polledAt !== null && now - found.polledAt.getTime() < found.intervalSeconds * 1000;
        await store.recordPoll(tx, hash, found.intervalSeconds + (early ? 5 : 0));
        return early
          ? new OAuthError('slow_down', `poll at most every ${found.intervalSeconds + 5} seconds`)
          : new OAuthError('authorization_pending', 'the person has not entered the code yet');
      }
      await store.markDeviceCodeUsed(tx, hash);
      if (found.decision === 'denied') return new OAuthError('access_denied', 'the person denied the request');
      const user = await store.getUser(tx, found.userId!);
      if (!user) return invalidGrant('the user who allowed the request no longer exists');
      const settings = client.auth?.device_code ?? {};
      const browser = found.sid && found.authTime ? { sid: found.sid, authTime: found.authTime, amr: found.amr } : undefined;
      const details = browser ? browserDetails(browser) : null;
      const shaped = await shapedClaimsFor(svc, client, { userId: user.id, scope: found.scope, audience: null, details });
      const { session, response } = mint(
        {
          type: 'device_code',
          origin: 'device_code',
          client,
          settings,
          userId: user.id,
          scope: found.scope,
          refresh: settings.refresh_token === true,
          details,
          shaped: withHooked(hooked?.access, shaped),
          clientAuthMethod: method,
          personSub: subjectFor(svc.subjects, client, user),
          ...dpopBound(dpop),
          ...certificateBound(certificate),
        },
        svc.config.baseUrl,
        svc.keyring.active,
        now,
      );
      await store.insertSessions(tx, [session]);
      const idToken =
        hasOpenid(found.scope) &&
        idTokenFor(svc, settings, {
          client,
          user,
          scope: found.scope,
          ...browserOf(session.details),
          shaped: withHooked(hooked?.id, shaped),
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
