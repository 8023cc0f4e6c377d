// The Txn-Token a request at an app's gate carries (draft-ietf-oauth-transaction-tokens-10 §12.1:
// "MUST use the HTTP Header "Txn-Token" to communicate the Txn-Token"), read for the App's
// policies as `request.txn`. A Txn-Token is no credential of the caller (§13.12: "A workload MUST
// NOT use a transaction token to authenticate itself"): it says which transaction the call is
// part of, beside whoever the Authorization header names.
import { checkTxnToken, TXN_TOKEN_HEADER, type TxnTokenServices } from '../credentials/txn-tokens.js';
import type { TxnSeen } from '../policy/requests.js';

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
