// The Txn-Token a request at an app's gate carries (draft-ietf-oauth-transaction-tokens-10 §12.1:
// "MUST use the HTTP Header "Txn-Token" to communicate the Txn-Token"), read for the App's
// policies as `request.txn`. A Txn-Token is no credential of the caller (§13.12: "A workload MUST
// NOT use a transaction token to authenticate itself"): it says which transaction the call is
// part of, beside whoever the Authorization header names.
import {
  checkTxnToken,
  newTxn,
  trustDomainOf,
  TXN_TOKEN_HEADER,
  type TxnClaims,
  type TxnTokenServices,
} from '../credentials/txn-tokens.js';
import { signJwt } from '../credentials/jwt.js';
import type { TxnSeen } from '../policy/requests.js';
import type { App } from '../types.js';
import type { Caller } from './request.js';

/**
 * The request's Txn-Token as the App's policies see it: null without the header; `{ problem }`
 * when it is there and not good (forged, of another Trust Domain, expired, its grant closed),
 * which refuses the request: §12.2, "A workload that receives a Txn-Token MUST evaluate the token
 * for validity before authorizing it", and a policy must never see a Txn-Token the box would not.
 */
export async function txnOfRequest(
  svc: TxnTokenServices,
  headers: Record<string, string | undefined>,
  now = Date.now(),
): Promise<TxnSeen | null | { problem: string }> {
  const value = headers[TXN_TOKEN_HEADER];
  if (value === undefined) return null;
  // §12.1: "The value of this header MUST be exactly one Txn-Token."
  const token = value.trim();
  if (!token || /[\s,]/.test(token)) return { problem: 'the Txn-Token header must hold exactly one Txn-Token' };
  const check = await checkTxnToken(svc, token, now);
  if ('problem' in check) return check;
  const c = check.claims;
  return {
    txn: c.txn,
    sub: c.sub,
    scope: c.scope.split(' ').filter(Boolean),
    tctx: c.tctx ?? {},
    rctx: c.rctx ?? {},
    req_wl: c.req_wl.split(','),
    iat: c.iat,
    exp: c.exp,
  };
}

const DEFAULT_GATE_TXN_LIFETIME = 60;

/**
 * The Txn-Token the decision point hands an App for an allowed request (App upstream.txnToken):
 * the gate is the External Endpoint of §8.1, asking on the App's behalf, so the App is the
 * requesting workload (`req_wl`). A new transaction each request (`txn`); the caller's subject,
 * the request's method, host and path as `tctx` (§9.2.3: "parameters of external call"), how the
 * person signed in as `rctx.authn` (RFC 8176, as the draft's example). Its `jti` is the caller's
 * session, as the upstream JWT's (./upstream-token.ts): closing that session ends it, and minting
 * it writes nothing (the hot path holds no database round trip).
 */
export function gateTxnToken(
  svc: Pick<TxnTokenServices, 'config' | 'keyring'>,
  app: App,
  caller: Caller,
  request: { method: string; host: string; path: string },
  now = Date.now(),
): string | undefined {
  const settings = app.upstream?.txnToken;
  if (!settings || !caller.session) return undefined;
  const iat = Math.floor(now / 1000);
  const claims: TxnClaims = {
    iss: svc.config.baseUrl,
    iat,
    aud: trustDomainOf(svc.config),
    exp: iat + (settings.lifetime ?? DEFAULT_GATE_TXN_LIFETIME),
    txn: newTxn(),
    sub: caller.subject?.sub ?? caller.user?.id ?? caller.client ?? '',
    scope: settings.scope ?? caller.scope ?? '',
    tctx: { method: request.method.toLowerCase(), host: request.host.toLowerCase(), path: request.path },
    ...(caller.amr ? { rctx: { authn: caller.amr } } : {}),
    req_wl: app.id,
    jti: caller.session,
  };
  return signJwt(svc.keyring.active, { ...claims }, 'txntoken+jwt');
}
